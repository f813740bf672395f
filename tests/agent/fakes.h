// Test doubles for the agent: a clock moved by hand and a process launcher
// that records what it is asked and reports exits the test decides.
//
// Not thread-safe: each test drives them from one thread.
#ifndef HPCAI500_TESTS_AGENT_FAKES_H_
#define HPCAI500_TESTS_AGENT_FAKES_H_

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "agent/process.h"
#include "common/clock.h"

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
  std::optional<pid_t> FindByArgument(const std::string& argument) override {
    auto it = by_argument.find(argument);
    if (it == by_argument.end() || start_times.count(it->second) == 0) {
      return std::nullopt;
    }
    return it->second;
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
};

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
