// The Agent's loop: one coordinator stream at a time, reconnected with
// backoff, with the self-fence, the leases and a pilot agent's leaving.
#include "agent/agent.h"

#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <deque>
#include <thread>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "agent/launch/worker_env.h"
#include "agent/system/files.h"
#include "common/closable_queue.h"
#include "common/keepalive.h"
#include "common/log.h"
#include "common/silence_deadline.h"
#include "common/tls_files.h"
#include "common/version.h"
#include "proto/hpcai500.grpc.pb.h"

namespace hpcai500::agent {

namespace {

constexpr int64_t kDefaultHeartbeatMs = 5000;
// How often the workers' leases are rewritten with the deadline the last
// word from the coordinator gives: well inside any node timeout, whatever
// the heartbeat interval (a lease renewed only per heartbeat could carry a
// deadline one interval old, and run out while the coordinator talks).
constexpr int64_t kLeaseRenewMs = 1000;
// The coordinator's default --node-timeout-s, until a Registered says.
constexpr int64_t kDefaultFenceTimeoutMs = 60000;
constexpr absl::Duration kPollInterval = absl::Milliseconds(100);
constexpr absl::Duration kFirstBackoff = absl::Milliseconds(500);
constexpr absl::Duration kMaxBackoff = absl::Seconds(10);
// How long one session waits for the connection before it starts over.
constexpr absl::Duration kConnectTimeout = absl::Seconds(20);
// A ping every 10 s when the stream is quiet; no answer within 5 s ends it.
// A leaving agent waits for its workers' last words this long beyond the
// kill grace period.
constexpr int64_t kLeaveSlackMs = 5000;

std::vector<std::string> CurrentEnvironment() {
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e)
    env.push_back(*e);
  return env;
}

SupervisorOptions MakeSupervisorOptions(const AgentOptions& options,
                                        const WorkerLeases* leases) {
  SupervisorOptions out;
  out.leases = leases;
  out.address = options.address;
  out.node.workdir = options.workdir;
  out.node.worker_path = options.worker_path;
  out.node.cpus = options.cpus;
  out.node.base_env = WorkerBaseEnv(CurrentEnvironment(),
                                    options.worker_env_names, options.iface);
  out.node.data_dirs = options.data_dirs;
  out.node.checkpoint_root = options.checkpoint_root;
  out.node.lease_holder_pid = ::getpid();
  out.kill_grace_ms = options.kill_grace_ms;
  out.launchers.mpirun = options.mpirun;
  out.launchers.rsh_agent = options.mpirun_rsh_agent;
  out.launchers.srun = options.srun;
  out.launchers.as_root = ::geteuid() == 0;
  if (const char* job = std::getenv("SLURM_JOB_ID")) {
    out.launchers.slurm_job_id = job;
  }
  if (const char* conf = std::getenv("SLURM_CONF")) {
    out.launchers.slurm_conf = conf;
  }
  return out;
}

// The channel to the coordinator (over TLS when `tls` has a CA), with
// keepalive pings (also while no call runs, with no limit on pings without
// data) so that a dead or silent coordinator breaks the stream instead of
// leaving it hanging.
std::shared_ptr<grpc::Channel> NewCoordinatorChannel(const std::string& target,
                                                     const TlsFiles& tls) {
  grpc::ChannelArguments args;
  SetAgentKeepalive(args);
  return grpc::CreateCustomChannel(target, CoordinatorChannelCredentials(tls),
                                   args);
}

// "data: imagenet=/scratch/imagenet, ..." for the start-up log.
std::string DataLocationsLine(const AgentOptions& options) {
  if (options.data_dirs.empty()) {
    return "data: no --data; workers read the registry's data_dir";
  }
  return absl::StrCat(
      "data: ",
      absl::StrJoin(options.data_dirs, ", ", absl::PairFormatter("=")),
      " (other datasets: the registry's data_dir)");
}

// "inventory: AMD EPYC 9654 96-Core Processor, 192 cpus, 2 GPUs (NVML,
// driver 550.54.15)" for the start-up log.
std::string InventoryLine(const AgentOptions& options) {
  const v1::Inventory& inventory = options.inventory;
  return absl::StrCat(
      "inventory: ",
      inventory.cpu_model().empty() ? "unknown CPU" : inventory.cpu_model(),
      ", ", inventory.cpu_cores(), " cpus, ", options.gpus, " GPUs (",
      options.nvml_missing.empty()
          ? absl::StrCat("NVML, driver ", inventory.driver_version())
          : absl::StrCat("from /dev; no NVML: ", options.nvml_missing),
      ")");
}

// The operator's line when the coordinator starts (until_ms > 0) or ends a
// maintenance window.
std::string MaintenanceLine(int64_t until_ms, int64_t node_timeout_ms) {
  if (until_ms == 0) {
    return "maintenance window ended: self-fencing again after the node "
           "timeout without word";
  }
  return absl::StrCat(
      "maintenance window until ",
      absl::FormatTime(absl::FromUnixMillis(until_ms), absl::UTCTimeZone()),
      ": workers keep running without word from the coordinator until ",
      node_timeout_ms / 1000, " s after it");
}

}  // namespace

Agent::Agent(AgentOptions options, ProcessLauncher* processes, Clock* clock)
    : options_(std::move(options)),
      clock_(clock),
      leases_(options_.workdir),
      supervisor_(MakeSupervisorOptions(options_, &leases_), processes, clock),
      preflight_(options_.worker_path,
                 WorkerBaseEnv(CurrentEnvironment(), options_.worker_env_names,
                               options_.iface),
                 /*cuda=*/options_.gpus > 0, options_.workdir, processes),
      fence_timeout_ms_(kDefaultFenceTimeoutMs) {}

absl::Status Agent::Run(const std::atomic<int>* stop) {
  SetLogIdentity("hpcai500-agent", absl::StrCat("node=", options_.name));
  if (absl::Status made = MakeDirectories(options_.workdir); !made.ok()) {
    return made;
  }
  int taken = supervisor_.Reattach();
  // The fence counts from the start: workers taken up are stopped when no
  // coordinator answers for as long as it would wait for this node.
  last_heard_ms_ = clock_->NowMs();
  LogInfo(absl::StrCat(
      "starting: coordinator ", options_.coordinator, ", workdir ",
      options_.workdir, ", checkpoints ", options_.checkpoint_root,
      options_.shared_checkpoints ? " (shared)" : "", ", slots ",
      options_.slots, ", address ", options_.address,
      options_.iface.empty() ? "" : absl::StrCat(", iface ", options_.iface),
      taken > 0
          ? absl::StrCat(", took up ", taken, " worker rank(s) from before")
          : ""));
  LogInfo(DataLocationsLine(options_));
  LogInfo(InventoryLine(options_));
  if (!options_.worker_version_missing.empty()) {
    LogWarning(absl::StrCat("inventory: no worker versions: ",
                            options_.worker_version_missing));
  }
  absl::Duration backoff = kFirstBackoff;
  while (stop->load() == 0) {
    std::string why;
    if (RunSession(stop, &why)) backoff = kFirstBackoff;
    if (stop->load() != 0) break;
    LogWarning(absl::StrCat("stream to coordinator ", options_.coordinator,
                            " ended (", why, "); retrying in ",
                            absl::FormatDuration(backoff)));
    // Workers are still reaped and killed while disconnected; what they
    // produce is sent by Resend() after reconnecting.
    absl::Time until = absl::Now() + backoff;
    while (stop->load() == 0 && absl::Now() < until) {
      supervisor_.Poll();
      FenceIfSilent();
      absl::SleepFor(kPollInterval);
    }
    backoff = std::min(backoff * 2, kMaxBackoff);
  }
  if (options_.leave_on_stop) {
    FinishLeaving(stop->load());
  } else {
    LogInfo("stopping; workers keep running and are taken up on restart");
  }
  return absl::OkStatus();
}

std::string Agent::BeginLeaving(int signal) {
  const std::string reason =
      absl::StrCat("agent stopped by ", signal == SIGTERM  ? "SIGTERM"
                                        : signal == SIGINT ? "SIGINT"
                                                           : "a signal");
  if (leave_by_ms_ == 0) {
    leave_by_ms_ = clock_->NowMs() + options_.kill_grace_ms + kLeaveSlackMs;
    const int stopping = supervisor_.FenceAll(reason);
    LogInfo(absl::StrCat("leaving (", reason, "): stopping ", stopping,
                         " attempt(s); waiting up to ",
                         (leave_by_ms_ - clock_->NowMs()) / 1000,
                         " s for their last events"));
  }
  return reason;
}

void Agent::FinishLeaving(int signal) {
  // Stopped while not connected: the workers still must not outlive it.
  BeginLeaving(signal);
  auto workers_running = [this] {
    for (const v1::RunningAttempt& attempt : supervisor_.Running()) {
      if (attempt.ranks_size() > 0) return true;
    }
    return false;
  };
  while (workers_running() && clock_->NowMs() < leave_by_ms_) {
    supervisor_.Poll();
    absl::SleepFor(kPollInterval);
  }
  const size_t undelivered = supervisor_.attempt_count();
  if (undelivered == 0) {
    LogInfo("left: every worker stopped, everything delivered");
  } else {
    LogWarning(absl::StrCat(
        "left with ", undelivered,
        " attempt(s) not fully delivered (their files stay in the workdir)",
        workers_running() ? "; some workers still run" : ""));
  }
}

v1::AgentMessage Agent::RegisterMessage() {
  v1::AgentMessage hello;
  v1::Register* reg = hello.mutable_register_();
  reg->set_name(options_.name);
  reg->set_address(options_.address);
  reg->set_slots(options_.slots);
  reg->set_cpus(options_.cpus);
  reg->set_gpus(options_.gpus);
  reg->mutable_labels()->insert(options_.labels.begin(), options_.labels.end());
  reg->set_hostname(options_.hostname);
  reg->set_version(std::string(ProjectVersion()));
  *reg->mutable_inventory() = options_.inventory;
  (*reg->mutable_inventory()->mutable_versions())["hpcai500"] =
      std::string(ProjectVersion());
  reg->set_shared_checkpoints(options_.shared_checkpoints);
  reg->set_workdir(options_.workdir);
  reg->set_checkpoint_root(options_.checkpoint_root);
  reg->set_iface(options_.iface);
  for (v1::RunningAttempt& running : supervisor_.Running()) {
    *reg->add_running() = std::move(running);
  }
  return hello;
}

int64_t Agent::FenceDeadlineMs() const {
  return SilenceDeadlineMs(last_heard_ms_, maintenance_until_ms_,
                           fence_timeout_ms_);
}

void Agent::FenceIfSilent() {
  if (clock_->NowMs() <= FenceDeadlineMs()) return;
  const int64_t silent_ms = clock_->NowMs() - last_heard_ms_;
  const std::string reason = absl::StrCat(
      "self-fenced: no word from the coordinator for ", silent_ms / 1000, " s");
  const int stopped = supervisor_.FenceAll(reason);
  if (stopped > 0) {
    LogWarning(absl::StrCat(reason, " (its node timeout is ",
                            fence_timeout_ms_ / 1000, " s); stopping ", stopped,
                            " attempt(s) on this node"));
  }
}

bool Agent::AwaitConnection(grpc::Channel& channel,
                            const std::atomic<int>* stop, std::string* why) {
  const absl::Time give_up = absl::Now() + kConnectTimeout;
  while (!channel.WaitForConnected(
      absl::ToChronoTime(absl::Now() + kPollInterval))) {
    supervisor_.Poll();
    FenceIfSilent();
    if (stop->load() != 0) {
      *why = "stopping";
      return false;
    }
    if (absl::Now() >= give_up) {
      *why = absl::StrCat("no connection within ",
                          absl::FormatDuration(kConnectTimeout));
      return false;
    }
  }
  return true;
}

// One session's state beside its stream, kept between the loop's turns.
struct Agent::Session {
  Session(grpc::ClientReaderWriter<v1::AgentMessage, v1::CoordinatorMessage>*
              stream,
          int64_t now_ms)
      : stream(stream), next_heartbeat_ms(now_ms + kDefaultHeartbeatMs) {}

  // Writes `message` unless a write failed before (then nothing more is).
  void Send(const v1::AgentMessage& message) {
    if (ok && !stream->Write(message)) ok = false;
  }
  void SendAll(const std::vector<v1::AgentMessage>& messages) {
    for (const v1::AgentMessage& m : messages) Send(m);
  }

  // Borrowed for the session.
  grpc::ClientReaderWriter<v1::AgentMessage, v1::CoordinatorMessage>* const
      stream;
  bool ok = true;           // every write went through
  bool registered = false;  // the coordinator answered Register
  bool leaving = false;     // Leaving sent
  int64_t heartbeat_ms = kDefaultHeartbeatMs;
  int64_t next_heartbeat_ms;
  int64_t next_lease_renewal_ms = 0;
};

bool Agent::RunSession(const std::atomic<int>* stop, std::string* why) {
  std::shared_ptr<grpc::Channel> channel =
      NewCoordinatorChannel(options_.coordinator, options_.tls);
  if (!AwaitConnection(*channel, stop, why)) return false;
  std::unique_ptr<v1::AgentService::Stub> stub =
      v1::AgentService::NewStub(channel);
  grpc::ClientContext context;
  if (!options_.auth_token.empty()) {
    context.AddMetadata("authorization",
                        absl::StrCat("Bearer ", options_.auth_token));
  }
  std::unique_ptr<
      grpc::ClientReaderWriter<v1::AgentMessage, v1::CoordinatorMessage>>
      stream = stub->Connect(&context);
  // Messages from the coordinator, handed from the reading thread to the loop.
  ClosableQueue<v1::CoordinatorMessage> inbox;
  std::thread reader([&] {
    v1::CoordinatorMessage message;
    while (stream->Read(&message)) inbox.Push(std::move(message));
    inbox.Close();
  });

  Session session(stream.get(), clock_->NowMs());
  session.Send(RegisterMessage());
  session.SendAll(supervisor_.Resend());
  bool closed = false;  // the coordinator ended the stream
  while (session.ok && !SessionOver(stop, session)) {
    std::deque<v1::CoordinatorMessage> messages =
        inbox.TakeAll(kPollInterval, &closed);
    // Checked before the batch counts as word: an agent resumed after a
    // SIGSTOP may find messages sent long ago.
    FenceIfSilent();
    if (!messages.empty()) {
      last_heard_ms_ = clock_->NowMs();
      leases_.set_deadline_ms(FenceDeadlineMs());
    }
    for (const v1::CoordinatorMessage& message : messages) {
      HandleMessage(message, session);
    }
    if (closed || SessionOver(stop, session)) break;
    Tick(session);
  }
  // Leaving of our own accord: cancel so the reader's Read returns. A
  // stream that ended (or whose write failed because it did) carries its
  // status (a refusal, a lost connection); cancelling would replace it.
  if (!closed && session.ok) context.TryCancel();
  reader.join();
  grpc::Status status = stream->Finish();
  // With the code, an operator tells a refusal (PERMISSION_DENIED: the
  // certificate names another node) from a lost connection (UNAVAILABLE).
  *why = status.ok()
             ? "closed by the coordinator"
             : absl::StrCat(
                   absl::StatusCodeToString(
                       static_cast<absl::StatusCode>(status.error_code())),
                   ": ", status.error_message());
  return session.registered;
}

bool Agent::SessionOver(const std::atomic<int>* stop, Session& session) {
  const int signal = stop->load();
  if (signal == 0) return false;
  if (!options_.leave_on_stop || !session.registered) return true;
  if (!session.leaving) {
    // Before any exit of a worker the same signal killed: the coordinator
    // must know the node leaves before it hears its rank is lost, or it
    // could place the new attempt right back on it.
    v1::AgentMessage leave;
    leave.mutable_leaving()->set_reason(BeginLeaving(signal));
    session.Send(leave);
    session.leaving = true;
  }
  return supervisor_.attempt_count() == 0 || clock_->NowMs() >= leave_by_ms_;
}

void Agent::HandleMessage(const v1::CoordinatorMessage& message,
                          Session& session) {
  switch (message.msg_case()) {
    case v1::CoordinatorMessage::kRegistered:
      HandleRegistered(message.registered(), session);
      break;
    case v1::CoordinatorMessage::kHeartbeat:
      break;  // word from the coordinator is all it carries
    case v1::CoordinatorMessage::kMaintenance:
      maintenance_until_ms_ = message.maintenance().until_ms();
      leases_.set_deadline_ms(FenceDeadlineMs());
      // Now, not at the next heartbeat: hpcai500d may be stopped next.
      if (session.registered) leases_.Renew(supervisor_.Running());
      LogInfo(MaintenanceLine(maintenance_until_ms_, fence_timeout_ms_));
      break;
    case v1::CoordinatorMessage::kAssignment:
      if (session.leaving) {
        // Sent before the coordinator read Leaving: it gives the run
        // another attempt elsewhere.
        LogInfo(absl::StrCat("leaving: ignoring an assignment of run ",
                             message.assignment().key().run_id()));
        break;
      }
      session.SendAll(supervisor_.HandleAssignment(message.assignment()));
      break;
    case v1::CoordinatorMessage::kCancel:
      supervisor_.HandleCancel(message.cancel());
      break;
    case v1::CoordinatorMessage::kAcks:
      supervisor_.HandleAcks(message.acks());
      break;
    case v1::CoordinatorMessage::kPreflight:
      if (std::optional<v1::AgentMessage> refused =
              preflight_.Start(message.preflight())) {
        session.Send(*refused);
      }
      break;
    default:
      LogWarning("unknown message from the coordinator ignored");
  }
}

void Agent::HandleRegistered(const v1::Registered& registered,
                             Session& session) {
  session.registered = true;
  if (registered.heartbeat_interval_ms() > 0) {
    session.heartbeat_ms =
        std::clamp<int64_t>(registered.heartbeat_interval_ms(), 100, 60000);
  }
  if (registered.node_timeout_ms() > 0) {
    fence_timeout_ms_ = registered.node_timeout_ms();
  }
  maintenance_until_ms_ = registered.maintenance_until_ms();
  leases_.set_deadline_ms(FenceDeadlineMs());
  LogInfo(absl::StrCat("registered with coordinator ", options_.coordinator,
                       " as ", registered.node(), "; self-fencing after ",
                       fence_timeout_ms_ / 1000, " s without word"));
}

void Agent::Tick(Session& session) {
  session.SendAll(supervisor_.Poll());
  if (std::optional<v1::AgentMessage> done = preflight_.Poll()) {
    session.Send(*done);
  }
  if (session.registered) session.SendAll(supervisor_.ResendOverdue());
  // Workers taken up from an earlier agent keep running only once the
  // coordinator has answered this one.
  if (session.registered && clock_->NowMs() >= session.next_lease_renewal_ms) {
    leases_.Renew(supervisor_.Running());
    session.next_lease_renewal_ms = clock_->NowMs() + kLeaseRenewMs;
  }
  if (clock_->NowMs() >= session.next_heartbeat_ms) {
    v1::AgentMessage beat;
    beat.mutable_heartbeat()->set_time_ms(clock_->NowMs());
    session.Send(beat);
    session.next_heartbeat_ms = clock_->NowMs() + session.heartbeat_ms;
  }
}

}  // namespace hpcai500::agent
