#include "server/coordinator.h"

#include <algorithm>
#include <tuple>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/event_keys.h"
#include "common/scoring.h"
#include "common/spec.h"
#include "common/status_macros.h"
#include "server/internal/log.h"

namespace hpcai500 {
namespace {

constexpr size_t kMaxSpecBytes = 1 << 20;
constexpr int kMaxRepetitions = 100;
constexpr size_t kMaxStderrTailBytes = 8 * 1024;
constexpr size_t kMaxNameBytes = 128;
constexpr size_t kMaxAddressBytes = 256;
constexpr int kMaxSlots = 4096;
constexpr int kDefaultListLimit = 100;
constexpr int kMaxListLimit = 10'000;
// A ListRuns text filter longer than this names no run (spec names are at
// most 64 bytes).
constexpr size_t kMaxListFilterBytes = 128;

bool IsTerminal(v1::RunState state) {
  return state == v1::RUN_STATE_SUCCEEDED || state == v1::RUN_STATE_FAILED ||
         state == v1::RUN_STATE_CANCELLED;
}

bool IsPlaced(v1::RunState state) {
  return state == v1::RUN_STATE_STARTING || state == v1::RUN_STATE_RUNNING;
}

std::string StateName(v1::RunState state) {
  std::string name = v1::RunState_Name(state);
  constexpr std::string_view kPrefix = "RUN_STATE_";
  if (name.rfind(kPrefix, 0) == 0) name = name.substr(kPrefix.size());
  return absl::AsciiStrToLower(name);
}

bool IsValidNodeName(const std::string& name) {
  if (name.empty() || name.size() > kMaxNameBytes) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return absl::ascii_isalnum(c) || c == '-' || c == '_' || c == '.';
  });
}

v1::AttemptKey Key(const v1::Run& run) {
  v1::AttemptKey key;
  key.set_run_id(run.id());
  key.set_attempt(run.attempts_size() > 0 ? run.attempts().rbegin()->number()
                                          : 0);
  return key;
}

std::string Describe(const v1::AttemptKey& key) {
  return absl::StrCat("run ", key.run_id(), " attempt ", key.attempt());
}

std::string TailOf(const std::string& text, size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  return "..." + text.substr(text.size() - max_bytes);
}

// "rank 1 on node b exited with code 3: <stderr tail>".
std::string ExitError(const std::string& node, const v1::WorkerExited& exit) {
  std::string what;
  if (!exit.error().empty()) {
    what = absl::StrCat("could not start: ", exit.error());
  } else if (exit.signal() != 0) {
    what = absl::StrCat("was killed by signal ", exit.signal());
  } else {
    what = absl::StrCat("exited with code ", exit.exit_code());
  }
  std::string text =
      absl::StrCat("rank ", exit.rank(), " on node ", node, " ", what);
  std::string tail = std::string(absl::StripTrailingAsciiWhitespace(
      TailOf(exit.stderr_tail(), kMaxStderrTailBytes)));
  if (!tail.empty()) absl::StrAppend(&text, "; stderr tail:\n", tail);
  return text;
}

std::string EpochLine(const v1::EpochSummary& epoch, int epochs,
                      const std::string& metric) {
  std::string line = absl::StrFormat(
      "epoch %d/%d: %d samples in %.1f s (%.1f samples/s), loss %.3f",
      epoch.epoch(), epochs, epoch.samples(), epoch.seconds(),
      epoch.throughput(), epoch.train_loss());
  if (epoch.accuracy() >= 0) {
    absl::StrAppendFormat(&line, ", %s %.4f", metric, epoch.accuracy());
  }
  return line;
}

std::string FinalLine(const v1::Run& run, const std::string& metric) {
  switch (run.state()) {
    case v1::RUN_STATE_SUCCEEDED: {
      if (!run.has_score()) return "succeeded";
      const v1::Score& s = run.score();
      return absl::StrFormat(
          "succeeded: %s %.4f (target %.4f, %s); %.4g FLOPS, Valid FLOPS "
          "%.4g",
          metric, s.quality(), s.target(),
          s.reached_target() ? "reached" : "below target", s.flops(),
          s.valid_flops());
    }
    case v1::RUN_STATE_FAILED:
      return absl::StrCat("failed: ", run.error());
    case v1::RUN_STATE_CANCELLED:
      return run.error().empty() ? "cancelled"
                                 : absl::StrCat("cancelled: ", run.error());
    default:
      return StateName(run.state());
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<Coordinator>> Coordinator::Create(
    Store* store, Clock* clock, const Registry* registry,
    CoordinatorOptions options) {
  std::unique_ptr<Coordinator> coordinator(
      new Coordinator(store, clock, registry, options));
  RETURN_IF_ERROR(coordinator->Restore());
  return coordinator;
}

Coordinator::Coordinator(Store* store, Clock* clock, const Registry* registry,
                         CoordinatorOptions options)
    : store_(store), clock_(clock), registry_(registry), options_(options) {}

Coordinator::~Coordinator() { Shutdown(); }

absl::Status Coordinator::Restore() {
  absl::MutexLock lock(&mu_);
  const int64_t now = clock_->NowMs();
  ASSIGN_OR_RETURN(events_ingested_, store_->CountEvents());
  ASSIGN_OR_RETURN(std::vector<v1::Node> nodes, store_->ListNodes());
  for (v1::Node& info : nodes) {
    // Silence is counted from this start, not from before the restart.
    info.set_last_seen_ms(now);
    info.set_connected(false);
    scheduler_.SetNode(info.name(), info.slots(), /*schedulable=*/false);
    nodes_[info.name()].info = std::move(info);
  }
  ASSIGN_OR_RETURN(
      std::vector<v1::Run> runs,
      store_->ListRunsInStates({v1::RUN_STATE_QUEUED, v1::RUN_STATE_STARTING,
                                v1::RUN_STATE_RUNNING}));
  for (v1::Run& run : runs) {
    RunRecord& record = runs_[run.id()];
    record.run = std::move(run);
    const v1::RunSpec& spec = record.run.spec();
    if (record.run.state() == v1::RUN_STATE_QUEUED) {
      scheduler_.Enqueue(record.run.id(), spec.nodes(), spec.ranks_per_node());
      continue;
    }
    if (record.run.attempts_size() == 0) {
      // Placed but no attempt stored: cannot happen, but never strand a run.
      record.run.set_state(v1::RUN_STATE_QUEUED);
      scheduler_.Enqueue(record.run.id(), spec.nodes(), spec.ranks_per_node());
      PersistLocked(record);
      continue;
    }
    const v1::Attempt& attempt = *record.run.attempts().rbegin();
    record.nodes.assign(attempt.nodes().begin(), attempt.nodes().end());
    record.start_sent = attempt.master_port() > 0;
    for (const std::string& name : record.nodes) {
      NodeState& node = nodes_[name];
      if (node.info.name().empty()) {
        node.info.set_name(name);
        node.info.set_last_seen_ms(now);
        scheduler_.SetNode(name, 0, /*schedulable=*/false);
      }
    }
    scheduler_.Hold(record.run.id(), record.nodes, spec.ranks_per_node());
    ASSIGN_OR_RETURN(std::vector<StoredEvent> stored,
                     store_->LoadEvents(record.run.id(), attempt.number()));
    for (const StoredEvent& event : stored) {
      if (!event.error.empty()) continue;
      absl::StatusOr<EventLine> parsed = ParseEventLine(event.line);
      if (parsed.ok()) AddEventLocked(record, *std::move(parsed));
    }
    record.log.push_back(absl::StrFormat(
        "hpcai500d restarted; waiting for the agents of attempt %d (%s)",
        attempt.number(), absl::StrJoin(record.nodes, ", ")));
    LogEpochsLocked(record, /*flush=*/false);
    LogLine(absl::StrFormat("run %d attempt %d: restored (%s), waiting for %s",
                            record.run.id(), attempt.number(),
                            StateName(record.run.state()),
                            absl::StrJoin(record.nodes, ", ")));
  }
  return absl::OkStatus();
}

// ------------------------------------------------------------------ clients

absl::StatusOr<v1::SubmitResponse> Coordinator::Submit(
    std::string_view spec_yaml) {
  if (spec_yaml.size() > kMaxSpecBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("spec: ", spec_yaml.size(), " bytes is over the limit of ",
                     kMaxSpecBytes));
  }
  ASSIGN_OR_RETURN(v1::RunSpec spec, ParseRunSpec(spec_yaml, *registry_));
  const int repetitions = std::max(1, spec.repetitions());
  if (repetitions > kMaxRepetitions) {
    return absl::InvalidArgumentError(
        absl::StrCat("field 'repetitions': must be at most ", kMaxRepetitions,
                     ", got ", repetitions));
  }
  std::vector<v1::RunSpec> run_specs;
  for (int i = 0; i < repetitions; ++i) {
    v1::RunSpec run_spec = spec;
    run_spec.set_repetitions(repetitions);
    run_spec.set_seed(spec.seed() + i);
    run_specs.push_back(std::move(run_spec));
  }
  absl::MutexLock lock(&mu_);
  const int64_t now = clock_->NowMs();
  ASSIGN_OR_RETURN(
      v1::SubmitResponse response,
      store_->CreateSubmission(std::string(spec_yaml), run_specs, now));
  for (int i = 0; i < response.run_ids_size(); ++i) {
    RunRecord& record = runs_[response.run_ids(i)];
    record.run.set_id(response.run_ids(i));
    record.run.set_submission_id(response.submission_id());
    record.run.set_repetition(i + 1);
    *record.run.mutable_spec() = run_specs[i];
    record.run.set_state(v1::RUN_STATE_QUEUED);
    record.run.set_created_ms(now);
    record.log.push_back(absl::StrFormat("queued: %s/%s, %d x %d ranks",
                                         spec.workload(), spec.config(),
                                         spec.nodes(), spec.ranks_per_node()));
    scheduler_.Enqueue(record.run.id(), spec.nodes(), spec.ranks_per_node());
  }
  LogLine(absl::StrFormat("submission %d: %s (%s/%s) queued as runs %s",
                          response.submission_id(), spec.name(),
                          spec.workload(), spec.config(),
                          absl::StrJoin(response.run_ids(), ", ")));
  ScheduleLocked();
  return response;
}

absl::StatusOr<v1::RunState> Coordinator::CancelRun(int64_t run_id) {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(RunRecord * record, RecordLocked(run_id));
  const v1::RunState state = record->run.state();
  if (state == v1::RUN_STATE_CANCELLED) return state;
  if (IsTerminal(state)) {
    return absl::FailedPreconditionError(
        absl::StrCat("run ", run_id, " already ", StateName(state)));
  }
  scheduler_.Dequeue(run_id);
  EndRunLocked(*record, v1::RUN_STATE_CANCELLED, "cancelled by a user",
               /*cancel_workers=*/IsPlaced(state));
  ScheduleLocked();
  return record->run.state();
}

absl::StatusOr<std::optional<v1::RunUpdate>> Coordinator::NextRunUpdate(
    int64_t run_id, WatchCursor* cursor, absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(RunRecord * record, RecordLocked(run_id));
  auto changed = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return shutdown_ || record->version > cursor->version;
  };
  mu_.AwaitWithTimeout(absl::Condition(&changed), timeout);
  if (shutdown_) {
    return absl::UnavailableError("hpcai500d is shutting down");
  }
  if (record->version <= cursor->version) return std::nullopt;
  v1::RunUpdate update;
  *update.mutable_run() = record->run;
  for (size_t i = cursor->log_sent; i < record->log.size(); ++i) {
    update.add_log(record->log[i]);
  }
  update.set_final(IsTerminal(record->run.state()));
  cursor->version = record->version;
  cursor->log_sent = record->log.size();
  return update;
}

absl::StatusOr<v1::Run> Coordinator::GetRun(int64_t run_id) {
  absl::MutexLock lock(&mu_);
  auto it = runs_.find(run_id);
  if (it != runs_.end()) return it->second.run;
  return store_->GetRun(run_id);
}

namespace {

// InvalidArgument naming the field of a filter no run can match.
absl::Status ValidateListRunsRequest(const v1::ListRunsRequest& request) {
  for (const auto& [field, value] :
       {std::pair<const char*, const std::string&>{"name", request.name()},
        {"workload", request.workload()},
        {"config", request.config()}}) {
    if (value.size() > kMaxListFilterBytes) {
      return absl::InvalidArgumentError(
          absl::StrCat("list runs: '", field, "' is longer than ",
                       kMaxListFilterBytes, " bytes"));
    }
  }
  if (!v1::RunState_IsValid(request.state())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "list runs: 'state' ", request.state(), " is not a run state"));
  }
  if (request.before_id() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("list runs: 'before_id' must not be negative, got ",
                     request.before_id()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<v1::ListRunsResponse> Coordinator::ListRuns(
    const v1::ListRunsRequest& request) {
  RETURN_IF_ERROR(ValidateListRunsRequest(request));
  v1::ListRunsRequest filter = request;
  if (filter.limit() <= 0) filter.set_limit(kDefaultListLimit);
  filter.set_limit(std::min(filter.limit(), kMaxListLimit));
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(std::vector<v1::Run> runs, store_->ListRuns(filter));
  v1::ListRunsResponse response;
  for (v1::Run& run : runs) {
    auto it = runs_.find(run.id());
    *response.add_runs() = it != runs_.end() ? it->second.run : std::move(run);
  }
  return response;
}

absl::StatusOr<v1::LeaderboardResponse> Coordinator::Leaderboard(
    const v1::LeaderboardRequest& request) {
  if (!request.workload().empty() &&
      registry_->FindWorkload(request.workload()) == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown workload '", request.workload(), "'"));
  }
  if (!request.config().empty()) {
    bool known = false;
    for (const ConfigInfo& config : registry_->configs()) {
      if (config.name == request.config() &&
          (request.workload().empty() ||
           config.workload == request.workload())) {
        known = true;
      }
    }
    if (!known) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown config '", request.config(), "'"));
    }
  }
  std::vector<v1::Run> runs;
  {
    absl::MutexLock lock(&mu_);
    ASSIGN_OR_RETURN(runs, store_->ListRuns(v1::ListRunsRequest()));
  }
  std::map<int64_t, std::vector<const v1::Run*>> by_submission;
  for (const v1::Run& run : runs) {
    by_submission[run.submission_id()].push_back(&run);
  }
  // (workload, config) -> rows.
  std::map<std::pair<std::string, std::string>, std::vector<v1::LeaderboardRow>>
      groups;
  for (auto& [submission_id, members] : by_submission) {
    const v1::RunSpec& spec = members.front()->spec();
    if (!request.workload().empty() && spec.workload() != request.workload()) {
      continue;
    }
    if (!request.config().empty() && spec.config() != request.config()) {
      continue;
    }
    const bool all_scored =
        std::all_of(members.begin(), members.end(), [](const v1::Run* run) {
          return run->state() == v1::RUN_STATE_SUCCEEDED && run->has_score();
        });
    if (!all_scored ||
        static_cast<int>(members.size()) < std::max(1, spec.repetitions())) {
      continue;
    }
    std::sort(
        members.begin(), members.end(),
        [](const v1::Run* a, const v1::Run* b) { return a->id() < b->id(); });
    std::vector<double> vflops, flops, quality;
    v1::LeaderboardRow row;
    row.set_ranked(true);
    for (const v1::Run* run : members) {
      vflops.push_back(run->score().valid_flops());
      flops.push_back(run->score().flops());
      quality.push_back(run->score().quality());
      row.add_run_ids(run->id());
      row.set_finished_ms(std::max(row.finished_ms(), run->finished_ms()));
      if (!run->spec().ranked()) row.set_ranked(false);
    }
    const Aggregate valid = AggregateRepetitions(vflops);
    row.set_submission_id(submission_id);
    row.set_name(spec.name());
    row.set_system(spec.system());
    row.set_workload(spec.workload());
    row.set_config(spec.config());
    row.set_level(spec.level());
    row.set_valid_flops(valid.mean);
    row.set_valid_flops_min(valid.min);
    row.set_valid_flops_max(valid.max);
    row.set_flops(AggregateRepetitions(flops).mean);
    row.set_quality(AggregateRepetitions(quality).mean);
    row.set_target(members.front()->score().target());
    row.set_runs(static_cast<int32_t>(members.size()));
    groups[{spec.workload(), spec.config()}].push_back(std::move(row));
  }
  v1::LeaderboardResponse response;
  for (auto& [group, rows] : groups) {
    // Ranked rows first, each part by Valid FLOPS, best first.
    std::stable_sort(
        rows.begin(), rows.end(),
        [](const v1::LeaderboardRow& a, const v1::LeaderboardRow& b) {
          if (a.ranked() != b.ranked()) return a.ranked();
          if (a.valid_flops() != b.valid_flops()) {
            return a.valid_flops() > b.valid_flops();
          }
          return a.submission_id() < b.submission_id();
        });
    int rank = 0;
    for (v1::LeaderboardRow& row : rows) {
      row.set_rank(row.ranked() ? ++rank : 0);
      *response.add_rows() = std::move(row);
    }
  }
  return response;
}

absl::StatusOr<v1::ListNodesResponse> Coordinator::ListNodes() {
  absl::MutexLock lock(&mu_);
  v1::ListNodesResponse response;
  for (const auto& [name, node] : nodes_) {
    v1::Node* info = response.add_nodes();
    *info = node.info;
    info->set_connected(node.session != 0);
    info->set_used_slots(scheduler_.used_slots(name));
  }
  return response;
}

std::string Coordinator::MetricsText() {
  absl::MutexLock lock(&mu_);
  std::string text =
      "# HELP hpcai500_runs Runs by state.\n# TYPE hpcai500_runs gauge\n";
  std::map<v1::RunState, int64_t> counts;
  for (int s = v1::RunState_MIN; s <= v1::RunState_MAX; ++s) {
    if (s != v1::RUN_STATE_UNSPECIFIED) counts[static_cast<v1::RunState>(s)];
  }
  absl::StatusOr<std::vector<std::pair<v1::RunState, int64_t>>> stored =
      store_->CountRunsByState();
  if (stored.ok()) {
    for (const auto& [state, count] : *stored) counts[state] = count;
  }
  for (const auto& [state, count] : counts) {
    absl::StrAppend(&text, "hpcai500_runs{state=\"", StateName(state), "\"} ",
                    count, "\n");
  }
  int connected = 0;
  for (const auto& [name, node] : nodes_) connected += node.session != 0;
  absl::StrAppend(
      &text,
      "# HELP hpcai500_queue_length Runs waiting for nodes.\n"
      "# TYPE hpcai500_queue_length gauge\n"
      "hpcai500_queue_length ",
      scheduler_.queue_length(),
      "\n# HELP hpcai500_nodes_connected Agents connected now.\n"
      "# TYPE hpcai500_nodes_connected gauge\n"
      "hpcai500_nodes_connected ",
      connected,
      "\n# HELP hpcai500_nodes_known Nodes ever registered.\n"
      "# TYPE hpcai500_nodes_known gauge\n"
      "hpcai500_nodes_known ",
      nodes_.size(),
      "\n# HELP hpcai500_events_ingested_total Event lines stored.\n"
      "# TYPE hpcai500_events_ingested_total counter\n"
      "hpcai500_events_ingested_total ",
      events_ingested_, "\n");
  return text;
}

// ------------------------------------------------------------------- agents

absl::StatusOr<int64_t> Coordinator::Connect(const v1::Register& request,
                                             AgentChannel* channel) {
  if (!IsValidNodeName(request.name())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "register: node name '", request.name().substr(0, kMaxNameBytes),
        "' must be 1 to ", kMaxNameBytes,
        " characters of letters, digits, '.', '-' and '_'"));
  }
  if (request.slots() < 1 || request.slots() > kMaxSlots) {
    return absl::InvalidArgumentError(
        absl::StrCat("register: slots must be between 1 and ", kMaxSlots,
                     ", got ", request.slots()));
  }
  if (request.address().size() > kMaxAddressBytes ||
      request.hostname().size() > kMaxAddressBytes || request.cpus() < 0 ||
      request.gpus() < 0) {
    return absl::InvalidArgumentError(
        "register: address, hostname, cpus or gpus out of range");
  }
  absl::MutexLock lock(&mu_);
  const int64_t now = clock_->NowMs();
  NodeState& node = nodes_[request.name()];
  if (node.session != 0) {
    LogLine(
        absl::StrCat("node ", request.name(),
                     ": registered again; the previous stream is replaced"));
    sessions_.erase(node.session);
  }
  const int64_t session = next_session_++;
  sessions_[session] = request.name();
  node.session = session;
  node.channel = channel;
  v1::Node& info = node.info;
  info.set_name(request.name());
  info.set_address(request.address().empty() ? request.hostname()
                                             : request.address());
  info.set_slots(request.slots());
  info.set_cpus(request.cpus());
  info.set_gpus(request.gpus());
  *info.mutable_labels() = request.labels();
  info.set_last_seen_ms(now);
  scheduler_.SetNode(info.name(), info.slots(), /*schedulable=*/true);
  absl::Status saved = store_->SaveNode(info);
  if (!saved.ok()) LogLine(saved.ToString());
  LogLine(absl::StrFormat(
      "node %s: registered (%s, %d slots, %d cpus, %d gpus, %d attempts "
      "running)",
      info.name(), info.address(), info.slots(), info.cpus(), info.gpus(),
      request.running_size()));

  v1::CoordinatorMessage registered;
  registered.mutable_registered()->set_node(info.name());
  registered.mutable_registered()->set_heartbeat_interval_ms(
      options_.heartbeat_interval_ms);
  channel->Send(registered);

  // Reconcile what the agent runs with what the coordinator expects of it.
  std::set<std::pair<int64_t, int32_t>> listed;
  for (const v1::RunningAttempt& running : request.running()) {
    listed.insert({running.key().run_id(), running.key().attempt()});
    if (CurrentAttemptLocked(running.key()) == nullptr) {
      v1::CoordinatorMessage cancel;
      *cancel.mutable_cancel()->mutable_key() = running.key();
      cancel.mutable_cancel()->set_reason(absl::StrCat(
          Describe(running.key()), " is not running on the coordinator"));
      channel->Send(cancel);
      LogLine(absl::StrCat("node ", info.name(), ": cancelling its ",
                           Describe(running.key()), " (not current)"));
    }
  }
  for (auto& [run_id, record] : runs_) {
    if (!IsPlaced(record.run.state())) continue;
    auto at = std::find(record.nodes.begin(), record.nodes.end(), info.name());
    if (at == record.nodes.end()) continue;
    const v1::AttemptKey key = Key(record.run);
    if (listed.count({key.run_id(), key.attempt()}) > 0) continue;
    const bool rank0_node = at == record.nodes.begin();
    if (!record.start_sent) {
      // Nothing was started yet: ask rank 0's node for a port again.
      if (rank0_node) SendReserveLocked(record);
      continue;
    }
    EndRunLocked(record, v1::RUN_STATE_FAILED,
                 absl::StrCat("node ", info.name(), " re-registered without ",
                              Describe(key), ": its workers are gone"),
                 /*cancel_workers=*/true);
  }
  ScheduleLocked();
  return session;
}

absl::Status Coordinator::HandleAgentMessage(int64_t session,
                                             const v1::AgentMessage& message) {
  absl::MutexLock lock(&mu_);
  auto it = sessions_.find(session);
  if (it == sessions_.end()) {
    return absl::FailedPreconditionError(
        "agent session unknown or replaced by a newer registration");
  }
  NodeState& node = nodes_[it->second];
  node.info.set_last_seen_ms(clock_->NowMs());
  switch (message.msg_case()) {
    case v1::AgentMessage::kHeartbeat:
      HandleHeartbeatLocked(node);
      break;
    case v1::AgentMessage::kEvents:
      HandleEventsLocked(node, message.events());
      break;
    case v1::AgentMessage::kPortReserved:
      HandlePortReservedLocked(node, message.port_reserved());
      break;
    case v1::AgentMessage::kWorkerExited:
      HandleWorkerExitedLocked(node, message.worker_exited());
      break;
    case v1::AgentMessage::kRegister:
      return absl::InvalidArgumentError(
          "register: only the first message of a stream may register");
    case v1::AgentMessage::MSG_NOT_SET:
      return absl::InvalidArgumentError("empty agent message");
  }
  ScheduleLocked();
  return absl::OkStatus();
}

void Coordinator::Disconnect(int64_t session) {
  absl::MutexLock lock(&mu_);
  auto it = sessions_.find(session);
  if (it == sessions_.end()) return;
  NodeState& node = nodes_[it->second];
  sessions_.erase(it);
  if (node.session != session) return;
  node.session = 0;
  node.channel = nullptr;
  scheduler_.SetNode(node.info.name(), node.info.slots(),
                     /*schedulable=*/false);
  absl::Status saved = store_->SaveNode(node.info);
  if (!saved.ok()) LogLine(saved.ToString());
  LogLine(absl::StrFormat(
      "node %s: disconnected; its %d held slots wait up to %d s for it",
      node.info.name(), scheduler_.used_slots(node.info.name()),
      options_.node_timeout_ms / 1000));
}

void Coordinator::Tick() {
  absl::MutexLock lock(&mu_);
  const int64_t now = clock_->NowMs();
  for (auto& [name, node] : nodes_) {
    const int64_t silent_ms = now - node.info.last_seen_ms();
    if (silent_ms < options_.node_timeout_ms) continue;
    for (auto& [run_id, record] : runs_) {
      if (!IsPlaced(record.run.state())) continue;
      if (std::find(record.nodes.begin(), record.nodes.end(), name) ==
          record.nodes.end()) {
        continue;
      }
      EndRunLocked(
          record, v1::RUN_STATE_FAILED,
          absl::StrFormat("node %s silent for %d s (timeout %d s)", name,
                          silent_ms / 1000, options_.node_timeout_ms / 1000),
          /*cancel_workers=*/true);
    }
    if (node.session != 0) {
      // Connected but mute: stop placing runs on it until it speaks again.
      scheduler_.SetNode(name, node.info.slots(), /*schedulable=*/false);
    }
  }
  for (auto& [run_id, record] : runs_) {
    if (record.run.state() == v1::RUN_STATE_RUNNING &&
        record.all_exited_ms != 0 &&
        now - record.all_exited_ms >= options_.exit_grace_ms) {
      MaybeFinishLocked(record, /*force=*/true);
    }
  }
  ScheduleLocked();
}

void Coordinator::Shutdown() {
  absl::MutexLock lock(&mu_);
  shutdown_ = true;
}

void Coordinator::HandleHeartbeatLocked(NodeState& node) {
  if (node.session != 0) {
    scheduler_.SetNode(node.info.name(), node.info.slots(),
                       /*schedulable=*/true);
  }
}

void Coordinator::HandleEventsLocked(NodeState& node,
                                     const v1::Events& events) {
  // (run, attempt, rank) -> the highest seq seen in this batch.
  std::map<std::tuple<int64_t, int32_t, int32_t>, int64_t> touched;
  std::set<int64_t> changed_runs;
  for (const v1::Event& event : events.events()) {
    const v1::AttemptKey& key = event.key();
    const std::string where = absl::StrFormat(
        "run %d attempt %d rank %d seq %d from node %s", key.run_id(),
        key.attempt(), event.rank(), event.seq(), node.info.name());
    RunRecord* record = CurrentAttemptLocked(key);
    if (record != nullptr) {
      const int rpn = record->run.spec().ranks_per_node();
      auto at = std::find(record->nodes.begin(), record->nodes.end(),
                          node.info.name());
      const int node_index = static_cast<int>(at - record->nodes.begin());
      if (at == record->nodes.end() || event.rank() < node_index * rpn ||
          event.rank() >= (node_index + 1) * rpn || event.seq() < 1) {
        LogLine(
            absl::StrCat("ignoring event ", where,
                         ": that node does not host that rank, or seq < 1"));
        continue;
      }
    }
    std::string error;
    absl::StatusOr<EventLine> parsed = absl::InvalidArgumentError("unparsed");
    if (event.line().size() > kMaxEventLineBytes) {
      error = absl::StrCat("line of ", event.line().size(),
                           " bytes is over the limit of ", kMaxEventLineBytes);
    } else {
      parsed = ParseEventLine(event.line());
      if (!parsed.ok()) {
        error = std::string(parsed.status().message());
      } else if (parsed->rank != event.rank() || parsed->seq != event.seq()) {
        error = absl::StrFormat("line says rank %d seq %d", parsed->rank,
                                parsed->seq);
      }
    }
    if (!error.empty()) {
      LogLine(absl::StrCat("refusing event ", where, ": ", error));
    }
    absl::StatusOr<EventDisposition> disposition = store_->InsertEvent(
        key.run_id(), key.attempt(), event.rank(), event.seq(),
        error.empty() ? event.line() : std::string(), error);
    if (!disposition.ok()) {
      // Not stored: no ack, the agent sends it again.
      LogLine(absl::StrCat("storing event ", where, ": ",
                           disposition.status().ToString()));
      continue;
    }
    auto& highest = touched[{key.run_id(), key.attempt(), event.rank()}];
    highest = std::max(highest, event.seq());
    if (*disposition != EventDisposition::kStored) continue;
    ++events_ingested_;
    if (record != nullptr && error.empty()) {
      AddEventLocked(*record, *std::move(parsed));
      changed_runs.insert(key.run_id());
    }
  }
  for (int64_t run_id : changed_runs) {
    RunRecord& record = runs_[run_id];
    LogEpochsLocked(record, /*flush=*/false);
    ChangedLocked(record, "");
    MaybeFinishLocked(record, /*force=*/false);
  }
  v1::CoordinatorMessage reply;
  for (const auto& [id, highest] : touched) {
    const auto& [run_id, attempt, rank] = id;
    v1::AttemptKey key;
    key.set_run_id(run_id);
    key.set_attempt(attempt);
    // Events of the run's current attempt are acknowledged up to what is
    // stored without a gap. Those of a stale attempt or an unknown run are
    // never stored: acknowledging them is final and lets the agent drop them.
    absl::StatusOr<int32_t> current = store_->CurrentAttempt(run_id);
    int64_t seq = highest;
    if (current.ok() && *current == attempt) {
      absl::StatusOr<int64_t> contiguous =
          store_->ContiguousSeq(run_id, attempt, rank);
      seq = contiguous.ok() ? *contiguous : 0;
    }
    if (seq == 0) continue;
    v1::Ack* ack = reply.mutable_acks()->add_acks();
    *ack->mutable_key() = key;
    ack->set_rank(rank);
    ack->set_seq(seq);
  }
  if (reply.acks().acks_size() > 0 && node.channel != nullptr) {
    node.channel->Send(reply);
  }
}

void Coordinator::HandlePortReservedLocked(NodeState& node,
                                           const v1::PortReserved& port) {
  RunRecord* record = CurrentAttemptLocked(port.key());
  if (record == nullptr || record->start_sent || record->nodes.empty() ||
      record->nodes.front() != node.info.name()) {
    LogLine(absl::StrCat("node ", node.info.name(), ": ignoring a port for ",
                         Describe(port.key()), " (not awaited from it)"));
    return;
  }
  if (!port.error().empty() || port.port() < 1 || port.port() > 65535) {
    EndRunLocked(*record, v1::RUN_STATE_FAILED,
                 absl::StrFormat(
                     "node %s could not reserve a port: %s", node.info.name(),
                     port.error().empty() ? absl::StrCat("port ", port.port())
                                          : port.error()),
                 /*cancel_workers=*/true);
    return;
  }
  std::string host = port.host().empty() ? node.info.address() : port.host();
  if (host.empty() || host.size() > kMaxAddressBytes) {
    EndRunLocked(*record, v1::RUN_STATE_FAILED,
                 absl::StrCat("node ", node.info.name(),
                              " reported no usable rendezvous address"),
                 /*cancel_workers=*/true);
    return;
  }
  const v1::RunSpec& spec = record->run.spec();
  const int rpn = spec.ranks_per_node();
  const int world = spec.nodes() * rpn;
  for (size_t i = 0; i < record->nodes.size(); ++i) {
    v1::CoordinatorMessage start;
    v1::Assignment* assignment = start.mutable_assignment();
    assignment->set_phase(v1::Assignment::PHASE_START);
    *assignment->mutable_key() = port.key();
    *assignment->mutable_spec() = spec;
    assignment->set_world_size(world);
    assignment->set_node_rank(static_cast<int32_t>(i));
    for (int r = 0; r < rpn; ++r) {
      assignment->add_ranks(static_cast<int32_t>(i) * rpn + r);
    }
    assignment->set_master_addr(host);
    assignment->set_master_port(port.port());
    SendLocked(record->nodes[i], start);
  }
  record->start_sent = true;
  v1::Attempt* attempt =
      record->run.mutable_attempts()->Mutable(record->run.attempts_size() - 1);
  attempt->set_master_addr(host);
  attempt->set_master_port(port.port());
  attempt->set_state("running");
  record->run.set_state(v1::RUN_STATE_RUNNING);
  PersistLocked(*record);
  const std::string line = absl::StrFormat(
      "attempt %d: rendezvous at %s:%d; starting %d ranks on %s",
      attempt->number(), host, port.port(), world,
      absl::StrJoin(record->nodes, ", "));
  LogLine(absl::StrCat("run ", record->run.id(), " ", line));
  ChangedLocked(*record, line);
}

void Coordinator::HandleWorkerExitedLocked(NodeState& node,
                                           const v1::WorkerExited& exit) {
  RunRecord* record = CurrentAttemptLocked(exit.key());
  if (record == nullptr) return;  // a stale attempt or an ended run
  const int rpn = record->run.spec().ranks_per_node();
  auto at =
      std::find(record->nodes.begin(), record->nodes.end(), node.info.name());
  const int node_index = static_cast<int>(at - record->nodes.begin());
  if (at == record->nodes.end() || exit.rank() < node_index * rpn ||
      exit.rank() >= (node_index + 1) * rpn) {
    LogLine(absl::StrFormat("node %s: ignoring exit of rank %d of %s",
                            node.info.name(), exit.rank(),
                            Describe(exit.key())));
    return;
  }
  v1::WorkerExited& stored = record->exits[exit.rank()];
  stored = exit;
  stored.set_stderr_tail(TailOf(exit.stderr_tail(), kMaxStderrTailBytes));
  const bool failed =
      !exit.error().empty() || exit.signal() != 0 || exit.exit_code() != 0;
  LogLine(absl::StrFormat(
      "run %d attempt %d rank %d on node %s: %s", exit.key().run_id(),
      exit.key().attempt(), exit.rank(), node.info.name(),
      failed ? ExitError(node.info.name(), exit) : "exited 0"));
  if (failed) {
    EndRunLocked(*record, v1::RUN_STATE_FAILED,
                 ExitError(node.info.name(), stored), /*cancel_workers=*/true);
    return;
  }
  const int world = record->run.spec().nodes() * rpn;
  if (static_cast<int>(record->exits.size()) == world) {
    record->all_exited_ms = clock_->NowMs();
    MaybeFinishLocked(*record, /*force=*/false);
  }
}

// ------------------------------------------------------------------ helpers

void Coordinator::ScheduleLocked() {
  for (const Scheduler::Placement& placement : scheduler_.Schedule()) {
    auto it = runs_.find(placement.run_id);
    if (it == runs_.end()) {
      scheduler_.Release(placement.run_id);
      continue;
    }
    StartAttemptLocked(it->second, placement.nodes);
  }
}

void Coordinator::StartAttemptLocked(RunRecord& record,
                                     const std::vector<std::string>& nodes) {
  const int64_t now = clock_->NowMs();
  v1::Attempt* attempt = record.run.add_attempts();
  attempt->set_number(record.run.attempts_size());
  attempt->set_state("starting");
  for (const std::string& node : nodes) attempt->add_nodes(node);
  attempt->set_started_ms(now);
  record.nodes = nodes;
  record.start_sent = false;
  record.exits.clear();
  record.all_exited_ms = 0;
  record.events.clear();
  record.stats_ranks.clear();
  record.accuracy_epochs.clear();
  record.stopped_ranks.clear();
  record.logged_epochs.clear();
  record.run.clear_epochs();
  record.run.set_state(v1::RUN_STATE_STARTING);
  if (record.run.started_ms() == 0) record.run.set_started_ms(now);
  PersistLocked(record);
  const std::string line = absl::StrFormat(
      "attempt %d: placed on %s; node %s reserves the rendezvous port",
      attempt->number(), absl::StrJoin(nodes, ", "), nodes.front());
  LogLine(absl::StrCat("run ", record.run.id(), " ", line));
  ChangedLocked(record, line);
  SendReserveLocked(record);
}

void Coordinator::SendReserveLocked(RunRecord& record) {
  const v1::RunSpec& spec = record.run.spec();
  v1::CoordinatorMessage reserve;
  v1::Assignment* assignment = reserve.mutable_assignment();
  assignment->set_phase(v1::Assignment::PHASE_RESERVE);
  *assignment->mutable_key() = Key(record.run);
  *assignment->mutable_spec() = spec;
  assignment->set_world_size(spec.nodes() * spec.ranks_per_node());
  assignment->set_node_rank(0);
  for (int r = 0; r < spec.ranks_per_node(); ++r) assignment->add_ranks(r);
  SendLocked(record.nodes.front(), reserve);
}

void Coordinator::SendLocked(const std::string& node,
                             const v1::CoordinatorMessage& message) {
  auto it = nodes_.find(node);
  if (it == nodes_.end() || it->second.channel == nullptr) {
    LogLine(absl::StrCat("node ", node, ": not connected; message dropped"));
    return;
  }
  it->second.channel->Send(message);
}

void Coordinator::EndRunLocked(RunRecord& record, v1::RunState state,
                               const std::string& error, bool cancel_workers) {
  const int64_t now = clock_->NowMs();
  if (cancel_workers && record.run.attempts_size() > 0) {
    v1::CoordinatorMessage cancel;
    *cancel.mutable_cancel()->mutable_key() = Key(record.run);
    cancel.mutable_cancel()->set_reason(error);
    for (const std::string& node : record.nodes) SendLocked(node, cancel);
  }
  scheduler_.Release(record.run.id());
  record.run.set_state(state);
  record.run.set_finished_ms(now);
  if (state != v1::RUN_STATE_SUCCEEDED) record.run.set_error(error);
  if (record.run.attempts_size() > 0) {
    v1::Attempt* attempt =
        record.run.mutable_attempts()->Mutable(record.run.attempts_size() - 1);
    attempt->set_state(StateName(state));
    attempt->set_finished_ms(now);
    if (state != v1::RUN_STATE_SUCCEEDED) attempt->set_error(error);
  }
  LogEpochsLocked(record, /*flush=*/true);
  PersistLocked(record);
  record.events.clear();
  record.events.shrink_to_fit();
  const std::string line = FinalLine(record.run, MetricName(record.run.spec()));
  LogLine(absl::StrCat("run ", record.run.id(), " ", line));
  ChangedLocked(record, line);
}

void Coordinator::MaybeFinishLocked(RunRecord& record, bool force) {
  if (record.run.state() != v1::RUN_STATE_RUNNING) return;
  const v1::RunSpec& spec = record.run.spec();
  const int world = spec.nodes() * spec.ranks_per_node();
  if (static_cast<int>(record.exits.size()) < world) return;
  if (!force && static_cast<int>(record.stopped_ranks.size()) < world) return;
  const ConfigInfo* config =
      registry_->FindConfig(spec.workload(), spec.config());
  const WorkloadInfo* workload = registry_->FindWorkload(spec.workload());
  if (config == nullptr || workload == nullptr) {
    EndRunLocked(record, v1::RUN_STATE_FAILED,
                 absl::StrCat("scoring: ", spec.workload(), "/", spec.config(),
                              " is not in this coordinator's registry"),
                 /*cancel_workers=*/false);
    return;
  }
  absl::StatusOr<v1::Score> score = ScoreRun(record.events, *config, *workload);
  if (!score.ok()) {
    EndRunLocked(record, v1::RUN_STATE_FAILED,
                 absl::StrCat("scoring: ", score.status().message()),
                 /*cancel_workers=*/false);
    return;
  }
  absl::Status saved = store_->SaveResult(record.run.id(), *score);
  if (!saved.ok()) {
    EndRunLocked(record, v1::RUN_STATE_FAILED,
                 absl::StrCat("storing the result: ", saved.message()),
                 /*cancel_workers=*/false);
    return;
  }
  *record.run.mutable_score() = *score;
  EndRunLocked(record, v1::RUN_STATE_SUCCEEDED, "", /*cancel_workers=*/false);
}

void Coordinator::PersistLocked(RunRecord& record) {
  absl::Status status = store_->UpdateRun(record.run);
  if (status.ok() && record.run.attempts_size() > 0) {
    status =
        store_->SaveAttempt(record.run.id(), *record.run.attempts().rbegin());
  }
  if (!status.ok()) {
    LogLine(absl::StrCat("run ", record.run.id(),
                         ": storing its state: ", status.ToString()));
  }
}

void Coordinator::ChangedLocked(RunRecord& record, std::string log_line) {
  if (!log_line.empty()) record.log.push_back(std::move(log_line));
  ++record.version;
}

void Coordinator::AddEventLocked(RunRecord& record, EventLine event) {
  const int epoch = event.epoch();
  if (event.key == event_keys::kEpochStats && epoch >= 0) {
    record.stats_ranks[epoch].insert(event.rank);
  } else if (event.key == event_keys::kEvalAccuracy && event.rank == 0 &&
             epoch >= 0) {
    record.accuracy_epochs.insert(epoch);
  } else if (event.key == event_keys::kRunStop) {
    record.stopped_ranks.insert(event.rank);
  }
  record.events.push_back(std::move(event));
}

void Coordinator::LogEpochsLocked(RunRecord& record, bool flush) {
  if (record.events.empty()) return;
  const v1::RunSpec& spec = record.run.spec();
  const size_t world =
      static_cast<size_t>(spec.nodes() * spec.ranks_per_node());
  std::vector<v1::EpochSummary> epochs = SummarizeEpochs(record.events);
  record.run.clear_epochs();
  for (const v1::EpochSummary& epoch : epochs) {
    *record.run.add_epochs() = epoch;
    if (record.logged_epochs.count(epoch.epoch()) > 0) continue;
    const bool complete = record.stats_ranks[epoch.epoch()].size() >= world &&
                          record.accuracy_epochs.count(epoch.epoch()) > 0;
    if (!complete && !flush) continue;
    record.logged_epochs.insert(epoch.epoch());
    record.log.push_back(EpochLine(epoch, spec.epochs(), MetricName(spec)));
  }
}

Coordinator::RunRecord* Coordinator::CurrentAttemptLocked(
    const v1::AttemptKey& key) {
  auto it = runs_.find(key.run_id());
  if (it == runs_.end() || !IsPlaced(it->second.run.state())) return nullptr;
  if (Key(it->second.run).attempt() != key.attempt()) return nullptr;
  return &it->second;
}

absl::StatusOr<Coordinator::RunRecord*> Coordinator::RecordLocked(
    int64_t run_id) {
  auto it = runs_.find(run_id);
  if (it != runs_.end()) return &it->second;
  ASSIGN_OR_RETURN(v1::Run run, store_->GetRun(run_id));
  RunRecord& record = runs_[run_id];
  record.run = std::move(run);
  const std::string metric = MetricName(record.run.spec());
  for (const v1::EpochSummary& epoch : record.run.epochs()) {
    record.log.push_back(EpochLine(epoch, record.run.spec().epochs(), metric));
  }
  if (IsTerminal(record.run.state())) {
    record.log.push_back(FinalLine(record.run, metric));
  }
  return &record;
}

std::string Coordinator::MetricName(const v1::RunSpec& spec) const {
  const WorkloadInfo* workload = registry_->FindWorkload(spec.workload());
  return workload != nullptr ? workload->metric : "quality";
}

}  // namespace hpcai500
