// Test doubles for the agent: a clock moved by hand and a process launcher
// that records what it is asked and reports exits the test decides.
//
// Not thread-safe: each test drives them from one thread.
#ifndef HPCAI500_TESTS_AGENT_FAKES_H_
#define HPCAI500_TESTS_AGENT_FAKES_H_

#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "agent/system/process.h"
#include "common/clock.h"
#include "proto/hpcai500.pb.h"

namespace hpcai500::agent {

class FakeClock final : public Clock {
 public:
  int64_t NowMs() override { return now_ms; }
  int64_t now_ms = 1'000'000;
};

class FakeProcessLauncher final : public ProcessLauncher {
 public:
  absl::StatusOr<pid_t> Launch(const LaunchSpec& spec) override {
    if (fail_launch)
      return absl::FailedPreconditionError("cannot start (fake)");
    launches.push_back(spec);
    pid_t pid = next_pid++;
    start_times[pid] = 5000 + pid;
    return pid;
  }
  std::optional<ExitStatus> TryWait(pid_t pid) override {
    auto it = exits.find(pid);
    if (it == exits.end()) return std::nullopt;
    start_times.erase(pid);
    return it->second;
  }
  void SignalGroup(pid_t pgid, int sig) override {
    signals.emplace_back(pgid, sig);
  }
  absl::StatusOr<uint64_t> StartTime(pid_t pid) override {
    auto it = start_times.find(pid);
    if (it == start_times.end()) return absl::NotFoundError("no process");
    return it->second;
  }

  void SignalProcess(pid_t pid, int sig) override {
    process_signals.emplace_back(pid, sig);
  }
  std::map<std::string, pid_t> FindByArguments(
      const std::set<std::string>& arguments) override {
    ++process_scans;
    std::map<std::string, pid_t> found;
    for (const std::string& argument : arguments) {
      auto it = by_argument.find(argument);
      if (it != by_argument.end() && start_times.count(it->second) > 0) {
        found.emplace(argument, it->second);
      }
    }
    return found;
  }

  bool fail_launch = false;
  pid_t next_pid = 100;
  std::vector<LaunchSpec> launches;
  std::map<pid_t, ExitStatus> exits;      // set by the test: pid has ended
  std::map<pid_t, uint64_t> start_times;  // live processes
  std::vector<std::pair<pid_t, int>> signals;
  // Processes another launcher started, by one of their arguments (set by
  // the test; live while in start_times).
  std::map<std::string, pid_t> by_argument;
  std::vector<std::pair<pid_t, int>> process_signals;
  int process_scans = 0;  // calls of FindByArguments: looks at every process
};

// Attempt 1 of run `run`: a PHASE_START of `world` ranks of the
// Fashion-MNIST smoke config (cpu, fp32, 1 epoch, batch 32) holding
// `ranks`, rendezvous at 127.0.0.1:29500.
inline v1::Assignment SmokeStart(int64_t run, const std::vector<int>& ranks,
                                 int world) {
  v1::Assignment a;
  a.set_phase(v1::Assignment::PHASE_START);
  a.mutable_key()->set_run_id(run);
  a.mutable_key()->set_attempt(1);
  v1::RunSpec* spec = a.mutable_spec();
  spec->set_workload("image_classification");
  spec->set_config("fashion_mnist_smoke");
  spec->set_device("cpu");
  spec->set_precision("fp32");
  spec->set_epochs(1);
  spec->set_batch_size(32);
  a.set_world_size(world);
  for (int r : ranks) a.add_ranks(r);
  a.set_master_addr("127.0.0.1");
  a.set_master_port(29500);
  return a;
}

// The WorkerExited messages among `messages`, in order.
inline std::vector<v1::WorkerExited> Exits(
    const std::vector<v1::AgentMessage>& messages) {
  std::vector<v1::WorkerExited> exits;
  for (const v1::AgentMessage& m : messages) {
    if (m.has_worker_exited()) exits.push_back(m.worker_exited());
  }
  return exits;
}

// An event line in the worker's format (docs/events.md).
inline std::string EventLineText(int64_t seq, int rank,
                                 const std::string& key = "epoch_start",
                                 const std::string& extra_metadata = "") {
  return absl::StrCat(
      ":::MLLOG {\"namespace\": \"\", \"time_ms\": ", 1764662400000 + seq,
      ", \"event_type\": \"POINT_IN_TIME\", \"key\": \"", key,
      "\", \"value\": null, \"metadata\": {\"file\": \"t.cc\", \"lineno\": 0, "
      "\"seq\": ",
      seq, ", \"rank\": ", rank, extra_metadata, "}}\n");
}

}  // namespace hpcai500::agent

#endif  // HPCAI500_TESTS_AGENT_FAKES_H_
