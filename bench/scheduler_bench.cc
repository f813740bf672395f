// hpcai500-scheduler-bench: the coordinator at cluster scale (issue 13). It
// starts a real hpcai500d (a subprocess), connects --agents simulated agents
// over the real AgentService (one stream each, one slot, one cpu, no gpu, a
// heartbeat every --heartbeat-ms whatever Registered says), and through the
// real ClientService:
//   1. submits one single-node run per agent, paced at --submit-rate, and
//      measures each submit -> PHASE_START at an agent;
//   2. submits --queued more runs, which wait: every node is busy;
//   3. holds still for --steady-s: the coordinator's CPU share (utime +
//      stime over wall time, % of one core), its memory (VmRSS, VmHWM) and
//      the heartbeats' round trips;
//   4. ends --churn runs, one every --churn-interval-ms (WorkerExited, exit
//      code 1: the run fails and frees its node), and measures each exit ->
//      the next queued run's PHASE_START on the freed node.
// It prints one RESULT line per figure with its goal (< 25% of one core,
// p99 < 1 s) and the command line.
//
// hpcai500d runs with --max-queued-per-user 0 (no cap) and
// --heartbeat-interval-s set to the simulated agents' beat (whole seconds,
// at least 1); by default that is hpcai500d's own default interval
// (kDefaultHeartbeatIntervalMs, 5 s), the beat a real cluster runs at. Auth is
// on, as on a cluster: before starting hpcai500d the bench makes operator
// tokens for the submitting users and admin tokens for the agents (a few agents
// per token, under the per-user request rate) with `hpcai500d token create`.
//
//   hpcai500-scheduler-bench [--agents 1000] [--queued 10000] [--steady-s 60]
//       [--churn 200] [--churn-interval-ms 50] [--submit-rate 100]
//       [--submit-threads 4] [--heartbeat-ms 5000] [--node-timeout-s 600]
//       [--agents-per-connection 1] [--wait-s 900] [--submit-batch 1]
//       [--quiet-fill] [--hpcai500d PATH] [--dir DIR]
#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/flags.h"
#include "common/keepalive.h"
#include "common/numbers.h"
#include "proto/hpcai500.grpc.pb.h"
#include "server/coordinator/node_timing.h"

namespace hpcai500::bench {
namespace {

using Clock = std::chrono::steady_clock;

constexpr char kUsage[] =
    "usage: hpcai500-scheduler-bench [--agents 1000] [--queued 10000]\n"
    "    [--steady-s 60] [--churn 200] [--churn-interval-ms 50]\n"
    "    [--submit-rate 100] [--submit-threads 4] [--heartbeat-ms 5000]\n"
    "    [--node-timeout-s 600] [--agents-per-connection 1] [--wait-s 900]\n"
    "    [--submit-batch 1] [--quiet-fill] [--hpcai500d PATH] [--dir DIR]\n"
    "--submit-batch N: phase 2 submits N runs at a time (repetitions: N,\n"
    "at most 100); --quiet-fill: the heartbeats pause during phase 2.\n"
    "--hpcai500d defaults to the hpcai500d beside this binary; --dir to a\n"
    "new folder under /tmp (the database and hpcai500d.log stay there).\n";

// Issue 13's goals.
constexpr double kCpuGoalPercent = 25;
constexpr double kLatencyGoalMs = 1000;
// Submitting users: their request rates together (AccessLimits: 50 per
// second each) stay above what the coordinator can take.
constexpr int kUsers = 10;
// Agents per admin token: their registrations fit one token bucket's burst
// (AccessLimits: 200).
constexpr int kAgentsPerToken = 150;

struct BenchOptions {
  int agents = 1000;
  int queued = 10000;
  int steady_s = 60;
  int churn = 200;
  int churn_interval_ms = 50;
  int submit_rate = 100;  // phase 1 submissions per second
  int submit_threads = 4;
  int heartbeat_ms = kDefaultHeartbeatIntervalMs;  // hpcai500d's default
  // Generous, so that a coordinator too busy to read heartbeats for a while
  // does not lose nodes (and runs) in the middle of a measurement.
  int node_timeout_s = 600;
  int agents_per_connection = 1;  // 1: one TCP connection per agent
  int wait_s = 900;               // at most this long for each phase's end
  // Phase 2: runs per Submit (the spec's repetitions), and whether the
  // heartbeats pause meanwhile (a coordinator that spends a scheduling pass
  // per heartbeat may take hours to queue 10,000 runs one by one under
  // 1,000 heartbeats a second; phases 3 and 4 measure with them on).
  int submit_batch = 1;
  bool quiet_fill = false;
  std::string hpcai500d;
  std::string dir;
};

std::string DefaultCoordinatorPath() {
  return (std::filesystem::read_symlink("/proc/self/exe").parent_path() /
          "hpcai500d")
      .string();
}

absl::StatusOr<BenchOptions> ParseOptions(
    const std::vector<std::string>& args) {
  BenchOptions options;
  options.hpcai500d = DefaultCoordinatorPath();
  struct IntFlag {
    const char* name;
    int* value;
    int64_t low, high;
    std::string text;
  };
  std::vector<IntFlag> ints = {
      {"agents", &options.agents, 1, 100000, ""},
      {"queued", &options.queued, 0, 1000000, ""},
      {"steady-s", &options.steady_s, 1, 86400, ""},
      {"churn", &options.churn, 0, 1000000, ""},
      {"churn-interval-ms", &options.churn_interval_ms, 0, 60000, ""},
      {"submit-rate", &options.submit_rate, 1, 100000, ""},
      {"submit-threads", &options.submit_threads, 1, 256, ""},
      {"heartbeat-ms", &options.heartbeat_ms, 10, 60000, ""},
      {"node-timeout-s", &options.node_timeout_s, 1, 86400, ""},
      {"agents-per-connection", &options.agents_per_connection, 1, 100000, ""},
      {"wait-s", &options.wait_s, 1, 86400, ""},
      {"submit-batch", &options.submit_batch, 1, 100, ""},
  };
  bool help = false;
  std::unique_ptr<CLI::App> app = NewFlagApp("hpcai500-scheduler-bench");
  for (IntFlag& flag : ints) AddValueFlag(*app, flag.name, &flag.text);
  AddValueFlag(*app, "hpcai500d", &options.hpcai500d);
  AddValueFlag(*app, "dir", &options.dir);
  AddSwitch(*app, "quiet-fill", &options.quiet_fill);
  AddSwitch(*app, "help,h", &help);
  if (absl::Status parsed = ParseFlags(*app, args); !parsed.ok()) {
    return parsed;
  }
  if (help) return absl::CancelledError(kUsage);
  for (const IntFlag& flag : ints) {
    if (flag.text.empty()) continue;
    int64_t value = 0;
    std::string error;
    if (!ReadInt(absl::StrCat("--", flag.name), flag.text, flag.low, flag.high,
                 &value, &error)) {
      return absl::InvalidArgumentError(error);
    }
    *flag.value = static_cast<int>(value);
  }
  if (options.queued % options.submit_batch != 0) {
    return absl::InvalidArgumentError(
        "--queued: must be a multiple of --submit-batch");
  }
  if (options.churn > options.queued) {
    return absl::InvalidArgumentError(
        "--churn: at most --queued (each ended run starts a queued one)");
  }
  return options;
}

// ----------------------------------------------------------------- figures

double MsBetween(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

struct Summary {
  size_t n = 0;
  double p50 = 0;
  double p99 = 0;
  double max = 0;
};

// Nearest-rank percentiles of `values`.
Summary Summarize(std::vector<double> values) {
  Summary summary;
  summary.n = values.size();
  if (values.empty()) return summary;
  std::sort(values.begin(), values.end());
  auto rank = [&](double p) {
    const size_t index = static_cast<size_t>(std::ceil(p * values.size()));
    return values[std::max<size_t>(index, 1) - 1];
  };
  summary.p50 = rank(0.50);
  summary.p99 = rank(0.99);
  summary.max = values.back();
  return summary;
}

std::string Verdict(bool met) { return met ? "MET" : "MISSED"; }

std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string one, five, fifteen;
  in >> one >> five >> fifteen;
  return absl::StrCat(one, " ", five, " ", fifteen);
}

// Progress on stderr, "[  12.3 s] message", from the bench's start.
class Progress {
 public:
  void Say(const std::string& message) const {
    std::fprintf(stderr, "[%7.1f s] %s\n",
                 MsBetween(start_, Clock::now()) / 1e3, message.c_str());
    std::fflush(stderr);
  }

 private:
  const Clock::time_point start_ = Clock::now();
};

// ------------------------------------------------------------- subprocesses

// Runs `argv` with its stderr appended to `log` and returns its stdout;
// Internal when it cannot start or exits non-zero.
absl::StatusOr<std::string> RunAndCapture(const std::vector<std::string>& argv,
                                          const std::string& log) {
  int out[2];
  if (pipe(out) != 0) return absl::InternalError("pipe failed");
  const pid_t pid = fork();
  if (pid < 0) return absl::InternalError("fork failed");
  if (pid == 0) {
    dup2(out[1], 1);
    const int err = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    dup2(err, 2);
    close(out[0]);
    close(out[1]);
    std::vector<char*> args;
    for (const std::string& arg : argv) {
      args.push_back(const_cast<char*>(arg.c_str()));
    }
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  close(out[1]);
  std::string text;
  char buffer[4096];
  ssize_t got;
  while ((got = read(out[0], buffer, sizeof(buffer))) > 0) {
    text.append(buffer, static_cast<size_t>(got));
  }
  close(out[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return absl::InternalError(absl::StrCat(
        absl::StrJoin(argv, " "), ": failed (status ", status, "); see ", log));
  }
  return text;
}

// `hpcai500d token create` for `user` with `role` on `db`: the token text.
// Its messages go to `log`.
absl::StatusOr<std::string> CreateToken(const std::string& binary,
                                        const std::string& db,
                                        const std::string& role,
                                        const std::string& user,
                                        const std::string& log) {
  absl::StatusOr<std::string> text = RunAndCapture(
      {binary, "token", "create", "--db", db, "--role", role, "--user", user},
      log);
  if (!text.ok()) return text.status();
  return std::string(absl::StripAsciiWhitespace(*text));
}

// What /proc says of a process.
struct ProcessSample {
  double cpu_seconds = 0;  // utime + stime
  double rss_mb = 0;       // VmRSS
  double hwm_mb = 0;       // VmHWM: the peak RSS
};

// hpcai500d as a child process until destroyed (SIGTERM, SIGKILL after
// 10 s). Thread-compatible.
class CoordinatorProcess {
 public:
  // Starts `binary` on a free loopback port with `db`, logging to `log`,
  // and waits until it listens. Unavailable when it does not within 60 s.
  static absl::StatusOr<std::unique_ptr<CoordinatorProcess>> Start(
      const std::string& binary, const std::string& db, const std::string& log,
      int node_timeout_s, int heartbeat_interval_s) {
    const pid_t pid = fork();
    if (pid < 0) return absl::InternalError("fork failed");
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlives the bench
      const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(fd, 1);
      dup2(fd, 2);
      const std::string timeout = absl::StrCat(node_timeout_s);
      const std::string interval = absl::StrCat(heartbeat_interval_s);
      execl(binary.c_str(), binary.c_str(), "--grpc", "127.0.0.1:0", "--http",
            "127.0.0.1:0", "--db", db.c_str(), "--node-timeout-s",
            timeout.c_str(), "--heartbeat-interval-s", interval.c_str(),
            "--max-queued-per-user", "0", static_cast<char*>(nullptr));
      _exit(127);
    }
    std::unique_ptr<CoordinatorProcess> process(new CoordinatorProcess(pid));
    const Clock::time_point deadline = Clock::now() + std::chrono::seconds(60);
    while (Clock::now() < deadline) {
      if (std::optional<int> port = ListeningPort(log); port.has_value()) {
        process->port_ = *port;
        return process;
      }
      if (waitpid(pid, nullptr, WNOHANG) == pid) {
        process->pid_ = -1;
        return absl::UnavailableError(
            absl::StrCat("hpcai500d exited; see ", log));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return absl::UnavailableError(
        absl::StrCat("hpcai500d did not listen within 60 s; see ", log));
  }

  ~CoordinatorProcess() {
    if (pid_ <= 0) return;
    kill(pid_, SIGTERM);
    for (int i = 0; i < 100; ++i) {
      if (waitpid(pid_, nullptr, WNOHANG) == pid_) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }

  pid_t pid() const { return pid_; }
  std::string address() const { return absl::StrCat("127.0.0.1:", port_); }

  // CPU seconds and memory so far; Internal when /proc cannot be read.
  absl::StatusOr<ProcessSample> Sample() const {
    ProcessSample sample;
    std::ifstream stat(absl::StrCat("/proc/", pid_, "/stat"));
    std::string line;
    std::getline(stat, line);
    const size_t comm_end = line.rfind(')');
    if (comm_end == std::string::npos) {
      return absl::InternalError("cannot read /proc/PID/stat");
    }
    // After "pid (comm) ": state is field 3, utime 14, stime 15.
    std::vector<std::string> fields =
        absl::StrSplit(line.substr(comm_end + 2), ' ');
    double utime = 0, stime = 0;
    if (fields.size() < 13 || !absl::SimpleAtod(fields[11], &utime) ||
        !absl::SimpleAtod(fields[12], &stime)) {
      return absl::InternalError("cannot parse /proc/PID/stat");
    }
    sample.cpu_seconds = (utime + stime) / sysconf(_SC_CLK_TCK);
    std::ifstream status(absl::StrCat("/proc/", pid_, "/status"));
    while (std::getline(status, line)) {
      double kb = 0;
      std::vector<std::string> words =
          absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipWhitespace());
      if (words.size() < 2 || !absl::SimpleAtod(words[1], &kb)) continue;
      if (words[0] == "VmRSS:") sample.rss_mb = kb / 1024;
      if (words[0] == "VmHWM:") sample.hwm_mb = kb / 1024;
    }
    return sample;
  }

 private:
  explicit CoordinatorProcess(pid_t pid) : pid_(pid) {}

  // The port of the "grpc listening on HOST:PORT" line of `log`, if there.
  static std::optional<int> ListeningPort(const std::string& log) {
    std::ifstream in(log);
    std::string line;
    const std::string kListening = "grpc listening on ";
    while (std::getline(in, line)) {
      const size_t at = line.find(kListening);
      if (at == std::string::npos) continue;
      int port = 0;
      const std::string where = line.substr(at + kListening.size());
      if (absl::SimpleAtoi(where.substr(where.rfind(':') + 1), &port)) {
        return port;
      }
    }
    return std::nullopt;
  }

  pid_t pid_;
  int port_ = 0;
};

// ------------------------------------------------------------ measurements

// What the simulated agents saw, shared by all of them. Thread-safe.
class Recorder {
 public:
  enum class Phase { kSetup, kFirstRuns, kQueueing, kSteady, kChurn, kDone };

  void SetPhase(Phase phase) {
    std::lock_guard<std::mutex> lock(mu_);
    phase_ = phase;
  }

  void NoteSubmitted(int64_t run_id, Clock::time_point at) {
    std::lock_guard<std::mutex> lock(mu_);
    submitted_[run_id] = at;
  }
  void NoteSubmitRpc(double ms) {
    std::lock_guard<std::mutex> lock(mu_);
    submit_rpc_ms_[phase_].push_back(ms);
  }
  void NoteStart(int64_t run_id, Clock::time_point at) {
    std::lock_guard<std::mutex> lock(mu_);
    started_.emplace(run_id, at);
    ++starts_in_[phase_];
    cv_.notify_all();
  }
  // A node's worker was ended at `exited` and the next run started on it at
  // `started`.
  void NoteRequeueStart(Clock::time_point exited, Clock::time_point started) {
    std::lock_guard<std::mutex> lock(mu_);
    exit_to_start_ms_.push_back(MsBetween(exited, started));
    cv_.notify_all();
  }
  void NoteHeartbeatRtt(double ms) {
    std::lock_guard<std::mutex> lock(mu_);
    heartbeat_rtt_ms_[phase_].push_back(ms);
  }
  void NoteUnexpectedCancel() { unexpected_cancels_.fetch_add(1); }
  // The coordinator stored `count` worker exits (ExitAck).
  void NoteExitsAcked(int count) { exits_acked_.fetch_add(count); }

  // Waits until `done()` holds (checked under the lock) or `deadline`.
  template <typename Predicate>
  bool WaitUntil(Clock::time_point deadline, Predicate done) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_until(lock, deadline, [&] { return done(*this); });
  }
  // For WaitUntil's predicate (the lock is held there).
  size_t started_count() const { return started_.size(); }
  size_t requeue_starts() const { return exit_to_start_ms_.size(); }

  // Submit -> PHASE_START of the runs submitted in [first_id, last_id].
  std::vector<double> SubmitToStartMs(int64_t first_id, int64_t last_id) {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<double> ms;
    for (auto it = submitted_.lower_bound(first_id);
         it != submitted_.end() && it->first <= last_id; ++it) {
      auto started = started_.find(it->first);
      if (started != started_.end()) {
        ms.push_back(MsBetween(it->second, started->second));
      }
    }
    return ms;
  }
  std::vector<double> ExitToStartMs() {
    std::lock_guard<std::mutex> lock(mu_);
    return exit_to_start_ms_;
  }
  std::vector<double> HeartbeatRttMs(Phase phase) {
    std::lock_guard<std::mutex> lock(mu_);
    return heartbeat_rtt_ms_[phase];
  }
  std::vector<double> SubmitRpcMs(Phase phase) {
    std::lock_guard<std::mutex> lock(mu_);
    return submit_rpc_ms_[phase];
  }
  int StartsIn(Phase phase) {
    std::lock_guard<std::mutex> lock(mu_);
    return starts_in_[phase];
  }
  int unexpected_cancels() const { return unexpected_cancels_.load(); }
  int exits_acked() const { return exits_acked_.load(); }

 private:
  std::mutex mu_;  // guards what follows but the atomic
  std::condition_variable cv_;
  Phase phase_ = Phase::kSetup;
  std::map<int64_t, Clock::time_point> submitted_;
  std::map<int64_t, Clock::time_point> started_;
  std::map<Phase, int> starts_in_;
  std::vector<double> exit_to_start_ms_;
  std::map<Phase, std::vector<double>> heartbeat_rtt_ms_;
  std::map<Phase, std::vector<double>> submit_rpc_ms_;
  std::atomic<int> unexpected_cancels_{0};
  std::atomic<int> exits_acked_{0};
};

// ----------------------------------------------------------------- agents

// One simulated agent: a node "sim-NNNN" with one slot on one AgentService
// stream. Its reader thread answers the rendezvous as rank 0's agent does
// (PHASE_RESERVE -> PortReserved) and notes each PHASE_START and heartbeat
// answer; Heartbeat() and EndWorker() write from other threads. Thread-safe.
class SimAgent {
 public:
  SimAgent(int index, std::shared_ptr<grpc::Channel> channel, std::string token,
           Recorder* recorder)
      : index_(index),
        name_(absl::StrFormat("sim-%04d", index)),
        token_(std::move(token)),
        stub_(v1::AgentService::NewStub(std::move(channel))),
        recorder_(recorder) {}
  ~SimAgent() {
    if (context_ != nullptr) context_->TryCancel();
    if (reader_.joinable()) reader_.join();
  }

  // Opens the stream and registers, retrying while the coordinator refuses
  // for its request rate, until `deadline`; then starts the reader. Returns
  // the heartbeat interval Registered named.
  absl::StatusOr<int32_t> Register(Clock::time_point deadline) {
    while (true) {
      context_ = std::make_unique<grpc::ClientContext>();
      context_->AddMetadata("authorization", "Bearer " + token_);
      stream_ = stub_->Connect(context_.get());
      v1::AgentMessage hello;
      v1::Register* reg = hello.mutable_register_();
      reg->set_name(name_);
      reg->set_address("127.0.0.1");
      reg->set_hostname(name_);
      reg->set_slots(1);
      reg->set_cpus(1);
      reg->set_gpus(0);
      reg->set_version("scheduler-bench");
      v1::CoordinatorMessage reply;
      if (stream_->Write(hello) && stream_->Read(&reply) &&
          reply.has_registered()) {
        reader_ = std::thread([this] { ReadLoop(); });
        return reply.registered().heartbeat_interval_ms();
      }
      grpc::Status status = stream_->Finish();
      if (status.error_code() != grpc::StatusCode::RESOURCE_EXHAUSTED ||
          Clock::now() > deadline) {
        return absl::UnavailableError(
            absl::StrCat(name_, ": register: ", status.error_message()));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }

  void Heartbeat() {
    v1::AgentMessage beat;
    beat.mutable_heartbeat()->set_time_ms(
        std::chrono::duration_cast<std::chrono::milliseconds>(
            std::chrono::system_clock::now().time_since_epoch())
            .count());
    std::lock_guard<std::mutex> write(write_mu_);
    {
      std::lock_guard<std::mutex> lock(mu_);
      heartbeats_sent_.push_back(Clock::now());
    }
    stream_->Write(beat);
  }

  // Ends the running worker: WorkerExited with exit code 1 for rank 0 of
  // its attempt. False when no worker runs here.
  bool EndWorker() {
    v1::AgentMessage exited;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!running_.has_value()) return false;
      *exited.mutable_worker_exited()->mutable_key() = *running_;
      running_.reset();
      exit_sent_at_ = Clock::now();
    }
    exited.mutable_worker_exited()->set_rank(0);
    exited.mutable_worker_exited()->set_exit_code(1);
    exited.mutable_worker_exited()->set_stderr_tail("ended by the bench");
    std::lock_guard<std::mutex> write(write_mu_);
    return stream_->Write(exited);
  }

  bool running() {
    std::lock_guard<std::mutex> lock(mu_);
    return running_.has_value();
  }

 private:
  void ReadLoop() {
    v1::CoordinatorMessage message;
    while (stream_->Read(&message)) {
      const Clock::time_point now = Clock::now();
      switch (message.msg_case()) {
        case v1::CoordinatorMessage::kHeartbeat:
          OnHeartbeatAnswer(now);
          break;
        case v1::CoordinatorMessage::kAssignment:
          OnAssignment(message.assignment(), now);
          break;
        case v1::CoordinatorMessage::kCancel:
          OnCancel(message.cancel());
          break;
        case v1::CoordinatorMessage::kAcks:
          recorder_->NoteExitsAcked(message.acks().exits_size());
          break;
        default:
          break;
      }
    }
  }

  void OnHeartbeatAnswer(Clock::time_point now) {
    std::optional<Clock::time_point> sent;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (heartbeats_sent_.empty()) return;
      sent = heartbeats_sent_.front();
      heartbeats_sent_.pop_front();
    }
    recorder_->NoteHeartbeatRtt(MsBetween(*sent, now));
  }

  void OnAssignment(const v1::Assignment& assignment, Clock::time_point now) {
    if (assignment.phase() == v1::Assignment::PHASE_RESERVE) {
      v1::AgentMessage reserved;
      *reserved.mutable_port_reserved()->mutable_key() = assignment.key();
      reserved.mutable_port_reserved()->set_host("127.0.0.1");
      reserved.mutable_port_reserved()->set_port(20000 + index_ % 40000);
      std::lock_guard<std::mutex> write(write_mu_);
      stream_->Write(reserved);
      return;
    }
    if (assignment.phase() != v1::Assignment::PHASE_START) return;
    recorder_->NoteStart(assignment.key().run_id(), now);
    std::optional<Clock::time_point> exited;
    {
      std::lock_guard<std::mutex> lock(mu_);
      running_ = assignment.key();
      exited = exit_sent_at_;
      exit_sent_at_.reset();
    }
    if (exited.has_value()) recorder_->NoteRequeueStart(*exited, now);
  }

  // A cancel of the worker that runs here (not of the one the bench just
  // ended) means the coordinator gave up the run: a lost node.
  void OnCancel(const v1::Cancel& cancel) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!running_.has_value() || running_->run_id() != cancel.key().run_id() ||
        running_->attempt() != cancel.key().attempt()) {
      return;
    }
    running_.reset();
    recorder_->NoteUnexpectedCancel();
  }

  // Constant after construction.
  const int index_;
  const std::string name_;
  const std::string token_;
  const std::unique_ptr<v1::AgentService::Stub> stub_;
  Recorder* const recorder_;

  // Set by Register() before the reader starts; then constant.
  std::unique_ptr<grpc::ClientContext> context_;
  std::unique_ptr<
      grpc::ClientReaderWriter<v1::AgentMessage, v1::CoordinatorMessage>>
      stream_;
  std::thread reader_;

  std::mutex write_mu_;  // one writer at a time on the stream
  std::mutex mu_;        // guards what follows
  std::optional<v1::AttemptKey> running_;
  std::optional<Clock::time_point> exit_sent_at_;
  std::deque<Clock::time_point> heartbeats_sent_;  // not yet answered
};

// Sends every agent a heartbeat each `period`, spread evenly over it, on
// one thread, until destroyed; none while paused.
class Heartbeater {
 public:
  Heartbeater(const std::vector<std::unique_ptr<SimAgent>>* agents,
              std::chrono::milliseconds period)
      : thread_([this, agents, period] { Loop(*agents, period); }) {}
  ~Heartbeater() {
    stop_.store(true);
    thread_.join();
  }
  int64_t sent() const { return sent_.load(); }
  void Pause(bool paused) { paused_.store(paused); }

 private:
  void Loop(const std::vector<std::unique_ptr<SimAgent>>& agents,
            std::chrono::microseconds period) {
    const Clock::time_point start = Clock::now();
    const auto step = period / static_cast<int64_t>(agents.size());
    for (int64_t round = 0; !stop_.load(); ++round) {
      for (size_t i = 0; i < agents.size() && !stop_.load(); ++i) {
        std::this_thread::sleep_until(start + round * period +
                                      static_cast<int64_t>(i) * step);
        if (paused_.load()) continue;
        agents[i]->Heartbeat();
        sent_.fetch_add(1);
      }
    }
  }

  std::atomic<bool> stop_{false};
  std::atomic<bool> paused_{false};
  std::atomic<int64_t> sent_{0};
  std::thread thread_;  // last: starts once the rest is ready
};

// ------------------------------------------------------------ submissions

// The bench's run: one node, one rank, no retry; `repetitions` runs.
std::string RunSpecYaml(int repetitions) {
  return absl::StrCat(
      "name: scheduler-bench\n"
      "workload: image_classification\n"
      "config: fashion_mnist_smoke\n"
      "level: system\n"
      "nodes: 1\n"
      "ranks_per_node: 1\n"
      "device: cpu\n"
      "batch_size: 64\n"
      "precision: fp32\n"
      "seed: 1\n"
      "system: scheduler-bench\n"
      "max_retries: 0\n"
      "repetitions: ",
      repetitions, "\n");
}

// Submits the bench's one-node run as one of several users (round robin by
// the caller's index). Thread-safe.
class Submitter {
 public:
  Submitter(std::shared_ptr<grpc::Channel> channel,
            std::vector<std::string> tokens, Recorder* recorder)
      : stub_(v1::ClientService::NewStub(std::move(channel))),
        tokens_(std::move(tokens)),
        recorder_(recorder) {}

  // Submits call number `index` (`repetitions` runs) and notes when the
  // accepted call began. Retries while the coordinator answers
  // RESOURCE_EXHAUSTED (a user's request rate); returns the lowest and
  // highest run id.
  absl::StatusOr<std::pair<int64_t, int64_t>> Submit(int64_t index,
                                                     int repetitions) {
    v1::SubmitRequest request;
    request.set_spec_yaml(RunSpecYaml(repetitions));
    const std::string& token = tokens_[index % tokens_.size()];
    while (true) {
      grpc::ClientContext context;
      context.AddMetadata("authorization", "Bearer " + token);
      context.set_deadline(std::chrono::system_clock::now() +
                           std::chrono::seconds(300));
      v1::SubmitResponse response;
      const Clock::time_point begun = Clock::now();
      grpc::Status status = stub_->Submit(&context, request, &response);
      if (status.ok() && response.run_ids_size() == repetitions) {
        recorder_->NoteSubmitRpc(MsBetween(begun, Clock::now()));
        for (int64_t run_id : response.run_ids()) {
          recorder_->NoteSubmitted(run_id, begun);
        }
        return std::make_pair(response.run_ids(0),
                              response.run_ids(repetitions - 1));
      }
      if (status.error_code() != grpc::StatusCode::RESOURCE_EXHAUSTED) {
        return absl::UnavailableError(
            absl::StrCat("submit: ", status.error_message()));
      }
      retries_.fetch_add(1);
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  int64_t retries() const { return retries_.load(); }

 private:
  const std::unique_ptr<v1::ClientService::Stub> stub_;
  const std::vector<std::string> tokens_;
  Recorder* const recorder_;
  std::atomic<int64_t> retries_{0};
};

// Makes `count` Submit calls of `repetitions` runs each on `threads`
// threads, call k at `start` + k / `rate` (rate 0: as fast as the
// coordinator answers). Returns the lowest and highest run id.
absl::StatusOr<std::pair<int64_t, int64_t>> SubmitRuns(Submitter& submitter,
                                                       int64_t first_index,
                                                       int count,
                                                       int repetitions,
                                                       int threads, int rate) {
  std::atomic<int64_t> next{0};
  std::mutex mu;
  absl::Status failed = absl::OkStatus();
  int64_t low = INT64_MAX, high = 0;
  const Clock::time_point start = Clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      for (int64_t k = next.fetch_add(1); k < count; k = next.fetch_add(1)) {
        if (rate > 0) {
          std::this_thread::sleep_until(
              start + std::chrono::microseconds(k * 1'000'000 / rate));
        }
        absl::StatusOr<std::pair<int64_t, int64_t>> runs =
            submitter.Submit(first_index + k, repetitions);
        std::lock_guard<std::mutex> lock(mu);
        if (!runs.ok()) {
          failed = runs.status();
          next.store(count);
          return;
        }
        low = std::min(low, runs->first);
        high = std::max(high, runs->second);
      }
    });
  }
  for (std::thread& thread : pool) thread.join();
  if (!failed.ok()) return failed;
  return std::make_pair(low, high);
}

// -------------------------------------------------------------- the bench

// The report: RESULT lines on stdout.
void Result(const std::string& text) {
  std::printf("RESULT %s\n", text.c_str());
  std::fflush(stdout);
}

// A comment line of the report: "# text".
void Note(const std::string& text) {
  std::printf("# %s\n", text.c_str());
  std::fflush(stdout);
}

std::string FormatSummary(const Summary& s) {
  if (s.n == 0) return "no sample";
  return absl::StrFormat("p50 %.1f ms, p99 %.1f ms, max %.1f ms, n %d", s.p50,
                         s.p99, s.max, s.n);
}

class SchedulerBench {
 public:
  SchedulerBench(BenchOptions options, std::string command)
      : options_(std::move(options)), command_(std::move(command)) {}

  absl::Status Run() {
    Note(command_);
    Note(absl::StrFormat("%d cores, load average at start %s",
                         sysconf(_SC_NPROCESSORS_ONLN), LoadAverage()));
    if (absl::Status s = StartCoordinator(); !s.ok()) return s;
    if (absl::Status s = ConnectAgents(); !s.ok()) return s;
    heartbeater_ = std::make_unique<Heartbeater>(
        &agents_, std::chrono::milliseconds(options_.heartbeat_ms));
    std::this_thread::sleep_for(std::chrono::seconds(2));
    if (absl::Status s = FirstRuns(); !s.ok()) return s;
    if (absl::Status s = QueueRuns(); !s.ok()) return s;
    if (absl::Status s = SteadyState(); !s.ok()) return s;
    if (absl::Status s = Churn(); !s.ok()) return s;
    recorder_.SetPhase(Recorder::Phase::kDone);
    Note(absl::StrFormat("load average at end %s; log and database in %s",
                         LoadAverage(), options_.dir));
    if (recorder_.unexpected_cancels() > 0) {
      Result(absl::StrFormat(
          "unexpected_cancels %d (runs the coordinator gave up: nodes it "
          "thought lost; the figures above are suspect)",
          recorder_.unexpected_cancels()));
    }
    heartbeater_.reset();
    coordinator_.reset();  // the streams end with it
    return absl::OkStatus();
  }

 private:
  absl::Status StartCoordinator() {
    const std::string db = options_.dir + "/scheduler-bench.db";
    const std::string log = options_.dir + "/tokens.log";
    const int users = kUsers;
    const int agent_tokens =
        (options_.agents + kAgentsPerToken - 1) / kAgentsPerToken;
    for (int i = 0; i < users; ++i) {
      absl::StatusOr<std::string> token =
          CreateToken(options_.hpcai500d, db, "operator",
                      absl::StrCat("bench-user-", i), log);
      if (!token.ok()) return token.status();
      user_tokens_.push_back(*token);
    }
    for (int i = 0; i < agent_tokens; ++i) {
      absl::StatusOr<std::string> token =
          CreateToken(options_.hpcai500d, db, "admin",
                      absl::StrCat("bench-agents-", i), log);
      if (!token.ok()) return token.status();
      agent_tokens_.push_back(*token);
    }
    absl::StatusOr<std::unique_ptr<CoordinatorProcess>> started =
        CoordinatorProcess::Start(
            options_.hpcai500d, db, options_.dir + "/hpcai500d.log",
            options_.node_timeout_s, std::max(1, options_.heartbeat_ms / 1000));
    if (!started.ok()) return started.status();
    coordinator_ = *std::move(started);
    Note(absl::StrFormat(
        "hpcai500d pid %d at %s, --node-timeout-s %d "
        "--max-queued-per-user 0; auth on: %d "
        "submitting users (operator tokens), %d admin tokens for the agents",
        coordinator_->pid(), coordinator_->address(), options_.node_timeout_s,
        users, agent_tokens));
    progress_.Say(absl::StrCat("hpcai500d pid ", coordinator_->pid(), " up"));
    return absl::OkStatus();
  }

  std::shared_ptr<grpc::Channel> NewChannel() {
    grpc::ChannelArguments args;
    // A channel of its own (its own TCP connection), as each agent has.
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    SetAgentKeepalive(args);  // as each agent has
    return grpc::CreateCustomChannel(coordinator_->address(),
                                     grpc::InsecureChannelCredentials(), args);
  }

  absl::Status ConnectAgents() {
    std::shared_ptr<grpc::Channel> channel;
    for (int i = 0; i < options_.agents; ++i) {
      if (i % options_.agents_per_connection == 0) channel = NewChannel();
      agents_.push_back(std::make_unique<SimAgent>(
          i, channel, agent_tokens_[i / kAgentsPerToken], &recorder_));
    }
    const Clock::time_point deadline =
        Clock::now() + std::chrono::seconds(options_.wait_s);
    std::atomic<int> next{0};
    std::mutex mu;
    absl::Status failed = absl::OkStatus();
    std::vector<std::thread> pool;
    for (int t = 0; t < 8; ++t) {
      pool.emplace_back([&] {
        for (int i = next.fetch_add(1); i < options_.agents;
             i = next.fetch_add(1)) {
          absl::StatusOr<int32_t> interval = agents_[i]->Register(deadline);
          std::lock_guard<std::mutex> lock(mu);
          if (!interval.ok()) {
            failed = interval.status();
            next.store(options_.agents);
            return;
          }
          registered_interval_ms_ = *interval;
        }
      });
    }
    for (std::thread& thread : pool) thread.join();
    if (!failed.ok()) return failed;
    absl::StatusOr<ProcessSample> idle = coordinator_->Sample();
    if (!idle.ok()) return idle.status();
    idle_rss_mb_ = idle->rss_mb;
    Note(absl::StrFormat(
        "%d agents registered (Registered says a heartbeat every %d ms; "
        "they beat every %d ms); hpcai500d VmRSS %.1f MB",
        options_.agents, registered_interval_ms_, options_.heartbeat_ms,
        idle_rss_mb_));
    progress_.Say(absl::StrCat(options_.agents, " agents registered"));
    return absl::OkStatus();
  }

  // Phase 1: one run per agent, paced; submit -> PHASE_START.
  absl::Status FirstRuns() {
    recorder_.SetPhase(Recorder::Phase::kFirstRuns);
    client_channel_ = NewChannel();
    submitter_ =
        std::make_unique<Submitter>(client_channel_, user_tokens_, &recorder_);
    const Clock::time_point start = Clock::now();
    absl::StatusOr<std::pair<int64_t, int64_t>> ids = SubmitRuns(
        *submitter_, /*first_index=*/0, options_.agents,
        /*repetitions=*/1, options_.submit_threads, options_.submit_rate);
    if (!ids.ok()) return ids.status();
    progress_.Say(absl::StrFormat("phase 1: %d runs submitted in %.1f s",
                                  options_.agents,
                                  MsBetween(start, Clock::now()) / 1e3));
    const size_t want = static_cast<size_t>(options_.agents);
    const bool all = recorder_.WaitUntil(
        Clock::now() + std::chrono::seconds(options_.wait_s),
        [&](const Recorder& r) { return r.started_count() >= want; });
    const Summary latency =
        Summarize(recorder_.SubmitToStartMs(ids->first, ids->second));
    Result(absl::StrFormat(
        "submit_to_start: %s (%d runs onto %d idle nodes, submitted at %d/s; "
        "%d heartbeats/s)%s  goal p99 < %.0f ms: %s",
        FormatSummary(latency), options_.agents, options_.agents,
        options_.submit_rate, 1000 * options_.agents / options_.heartbeat_ms,
        all ? ""
            : absl::StrFormat("  (ONLY %d OF %d STARTED WITHIN %d S)",
                              latency.n, options_.agents, options_.wait_s),
        kLatencyGoalMs, Verdict(all && latency.p99 < kLatencyGoalMs)));
    progress_.Say("phase 1: done");
    return absl::OkStatus();
  }

  // Phase 2: --queued runs that wait behind busy nodes.
  absl::Status QueueRuns() {
    if (options_.queued == 0) return absl::OkStatus();
    recorder_.SetPhase(Recorder::Phase::kQueueing);
    const int batch = options_.submit_batch;
    if (options_.quiet_fill) heartbeater_->Pause(true);
    absl::StatusOr<ProcessSample> before = coordinator_->Sample();
    if (!before.ok()) return before.status();
    const Clock::time_point start = Clock::now();
    std::atomic<bool> done{false};
    std::thread reporter([&] {
      for (int tick = 1; !done.load(); ++tick) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        if (tick % 100 != 0) continue;  // every 10 s
        progress_.Say(absl::StrFormat(
            "phase 2: %d of %d runs submitted",
            batch * recorder_.SubmitRpcMs(Recorder::Phase::kQueueing).size(),
            options_.queued));
      }
    });
    absl::StatusOr<std::pair<int64_t, int64_t>> ids =
        SubmitRuns(*submitter_, /*first_index=*/options_.agents,
                   options_.queued / batch, batch, options_.submit_threads,
                   /*rate=*/0);
    const double seconds = MsBetween(start, Clock::now()) / 1e3;
    absl::StatusOr<ProcessSample> after = coordinator_->Sample();
    heartbeater_->Pause(false);
    done.store(true);
    reporter.join();
    if (!ids.ok()) return ids.status();
    if (!after.ok()) return after.status();
    Result(absl::StrFormat(
        "queue_fill: %d runs queued in %.1f s (%.0f runs/s, %d per Submit, "
        "%d threads, heartbeats %s, %d rate-limit retries); submit rpc %s; "
        "hpcai500d CPU %.0f%% of one core meanwhile; %d runs started (want "
        "0)",
        options_.queued, seconds, options_.queued / seconds, batch,
        options_.submit_threads, options_.quiet_fill ? "paused" : "on",
        submitter_->retries(),
        FormatSummary(
            Summarize(recorder_.SubmitRpcMs(Recorder::Phase::kQueueing))),
        100 * (after->cpu_seconds - before->cpu_seconds) / seconds,
        recorder_.StartsIn(Recorder::Phase::kQueueing)));
    progress_.Say("phase 2: done");
    return absl::OkStatus();
  }

  // Phase 3: nothing but heartbeats for --steady-s.
  absl::Status SteadyState() {
    recorder_.SetPhase(Recorder::Phase::kSteady);
    progress_.Say(absl::StrFormat("phase 3: steady state for %d s (pid %d)",
                                  options_.steady_s, coordinator_->pid()));
    absl::StatusOr<ProcessSample> before = coordinator_->Sample();
    if (!before.ok()) return before.status();
    const int64_t beats_before = heartbeater_->sent();
    rusage self_before{};
    getrusage(RUSAGE_SELF, &self_before);
    const Clock::time_point start = Clock::now();
    double peak_rss = 0;
    while (Clock::now() < start + std::chrono::seconds(options_.steady_s)) {
      std::this_thread::sleep_for(std::chrono::seconds(1));
      absl::StatusOr<ProcessSample> now = coordinator_->Sample();
      if (now.ok()) peak_rss = std::max(peak_rss, now->rss_mb);
    }
    const double seconds = MsBetween(start, Clock::now()) / 1e3;
    absl::StatusOr<ProcessSample> after = coordinator_->Sample();
    if (!after.ok()) return after.status();
    rusage self_after{};
    getrusage(RUSAGE_SELF, &self_after);
    const double cpu =
        100 * (after->cpu_seconds - before->cpu_seconds) / seconds;
    const std::vector<double> rtt =
        recorder_.HeartbeatRttMs(Recorder::Phase::kSteady);
    const double sent = (heartbeater_->sent() - beats_before) / seconds;
    Result(absl::StrFormat(
        "steady_cpu: hpcai500d %.1f%% of one core over %.0f s (%d agents, "
        "%.0f heartbeats/s sent, %.0f/s answered, %d runs queued, %d "
        "running; load average %s; the bench itself %.0f%%)  goal < %.0f%%: "
        "%s",
        cpu, seconds, options_.agents, sent, rtt.size() / seconds,
        options_.queued, options_.agents, LoadAverage(),
        100 * (CpuSeconds(self_after) - CpuSeconds(self_before)) / seconds,
        kCpuGoalPercent, Verdict(cpu < kCpuGoalPercent)));
    Result(absl::StrFormat(
        "steady_memory: hpcai500d VmRSS %.1f MB (peak in phase %.1f MB, "
        "VmHWM %.1f MB; %.1f MB with the agents registered and no run)",
        after->rss_mb, peak_rss, after->hwm_mb, idle_rss_mb_));
    Result(absl::StrFormat("steady_heartbeat_rtt: %s",
                           FormatSummary(Summarize(rtt))));
    return absl::OkStatus();
  }

  static double CpuSeconds(const rusage& usage) {
    return usage.ru_utime.tv_sec + usage.ru_utime.tv_usec / 1e6 +
           usage.ru_stime.tv_sec + usage.ru_stime.tv_usec / 1e6;
  }

  // Phase 4: ends --churn runs, one every --churn-interval-ms; each frees a
  // node for the head of the queue: exit -> PHASE_START there.
  absl::Status Churn() {
    if (options_.churn == 0) return absl::OkStatus();
    recorder_.SetPhase(Recorder::Phase::kChurn);
    progress_.Say(absl::StrFormat("phase 4: ending %d runs, one every %d ms",
                                  options_.churn, options_.churn_interval_ms));
    absl::StatusOr<ProcessSample> before = coordinator_->Sample();
    if (!before.ok()) return before.status();
    const Clock::time_point start = Clock::now();
    int ended = 0;
    size_t agent = agents_.size() - 1;
    for (int k = 0; k < options_.churn; ++k) {
      std::this_thread::sleep_until(
          start + std::chrono::milliseconds(k * options_.churn_interval_ms));
      for (int tries = 0; tries < options_.agents; ++tries) {
        agent = (agent + 1) % agents_.size();
        if (agents_[agent]->EndWorker()) {
          ++ended;
          break;
        }
      }
    }
    const size_t want = static_cast<size_t>(ended);
    const bool all = recorder_.WaitUntil(
        Clock::now() + std::chrono::seconds(options_.wait_s),
        [&](const Recorder& r) { return r.requeue_starts() >= want; });
    const double seconds = MsBetween(start, Clock::now()) / 1e3;
    absl::StatusOr<ProcessSample> after = coordinator_->Sample();
    if (!after.ok()) return after.status();
    const Summary latency = Summarize(recorder_.ExitToStartMs());
    Result(absl::StrFormat(
        "exit_to_next_start: %s (%d runs ended, one every %d ms, %d queued "
        "behind; %d exits acknowledged)%s  goal p99 < %.0f ms: %s",
        FormatSummary(latency), ended, options_.churn_interval_ms,
        options_.queued, recorder_.exits_acked(),
        all ? ""
            : absl::StrFormat("  (ONLY %d OF %d STARTED WITHIN %d S)",
                              latency.n, ended, options_.wait_s),
        kLatencyGoalMs, Verdict(all && latency.p99 < kLatencyGoalMs)));
    Result(absl::StrFormat(
        "churn_cpu: hpcai500d %.1f%% of one core over the %.1f s of phase 4; "
        "VmRSS %.1f MB, VmHWM %.1f MB; heartbeat rtt %s",
        100 * (after->cpu_seconds - before->cpu_seconds) / seconds, seconds,
        after->rss_mb, after->hwm_mb,
        FormatSummary(
            Summarize(recorder_.HeartbeatRttMs(Recorder::Phase::kChurn)))));
    return absl::OkStatus();
  }

  const BenchOptions options_;
  const std::string command_;
  Progress progress_;
  Recorder recorder_;
  std::vector<std::string> user_tokens_;
  std::vector<std::string> agent_tokens_;
  // Destroyed in reverse: the heartbeats stop, then hpcai500d, then the
  // agents' streams end.
  std::vector<std::unique_ptr<SimAgent>> agents_;
  std::shared_ptr<grpc::Channel> client_channel_;
  std::unique_ptr<Submitter> submitter_;
  std::unique_ptr<CoordinatorProcess> coordinator_;
  std::unique_ptr<Heartbeater> heartbeater_;
  int32_t registered_interval_ms_ = 0;
  double idle_rss_mb_ = 0;
};

// Raises the open-file limit to the hard limit: a connection per agent,
// here and in hpcai500d (which inherits it).
void RaiseFileLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
  }
}

int Main(int argc, char** argv) {
  absl::StatusOr<BenchOptions> options =
      ParseOptions(std::vector<std::string>(argv + 1, argv + argc));
  if (absl::IsCancelled(options.status())) {
    std::printf("%s", kUsage);
    return 0;
  }
  if (!options.ok()) {
    std::fprintf(stderr, "hpcai500-scheduler-bench: %s\n%s",
                 std::string(options.status().message()).c_str(), kUsage);
    return 2;
  }
  if (options->dir.empty()) {
    char tmpl[] = "/tmp/hpcai500-scheduler-bench-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) {
      std::fprintf(stderr, "hpcai500-scheduler-bench: mkdtemp failed\n");
      return 1;
    }
    options->dir = tmpl;
  }
  RaiseFileLimit();
  signal(SIGPIPE, SIG_IGN);
  SchedulerBench bench(*std::move(options),
                       absl::StrJoin(argv, argv + argc, " "));
  absl::Status status = bench.Run();
  if (!status.ok()) {
    std::fprintf(stderr, "hpcai500-scheduler-bench: %s\n",
                 std::string(status.message()).c_str());
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace hpcai500::bench

int main(int argc, char** argv) { return hpcai500::bench::Main(argc, argv); }
