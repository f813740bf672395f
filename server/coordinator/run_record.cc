#include "server/coordinator/run_record.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_format.h"
#include "common/run_state.h"
#include "server/coordinator/run_log.h"

namespace hpcai500 {

bool IsPlaced(v1::RunState state) {
  return state == v1::RUN_STATE_STARTING || state == v1::RUN_STATE_RUNNING;
}

RunRecord RunRecord::FromStored(v1::Run run, const std::string& metric) {
  RunRecord record;
  record.run = std::move(run);
  for (const v1::EpochSummary& epoch : record.run.epochs()) {
    record.log.push_back(EpochLine(epoch, record.run.spec().epochs(), metric));
  }
  if (IsTerminal(record.run.state())) {
    record.log.push_back(FinalLine(record.run, metric));
  }
  return record;
}

v1::AttemptKey RunRecord::key() const {
  v1::AttemptKey key;
  key.set_run_id(run.id());
  key.set_attempt(run.attempts_size() > 0 ? run.attempts().rbegin()->number()
                                          : 0);
  return key;
}

int RunRecord::world_size() const {
  return run.spec().nodes() * run.spec().ranks_per_node();
}

RunRecord RunRecord::Queued(int64_t id, int64_t submission_id, int repetition,
                            v1::RunSpec spec, int64_t now_ms) {
  RunRecord record;
  record.run.set_id(id);
  record.run.set_submission_id(submission_id);
  record.run.set_repetition(repetition);
  record.run.set_state(v1::RUN_STATE_QUEUED);
  record.run.set_created_ms(now_ms);
  record.log.push_back(absl::StrFormat("queued: %s/%s, %d x %d ranks",
                                       spec.workload(), spec.config(),
                                       spec.nodes(), spec.ranks_per_node()));
  *record.run.mutable_spec() = std::move(spec);
  return record;
}

int RunRecord::NodeIndex(const std::string& node) const {
  auto at = std::find(nodes.begin(), nodes.end(), node);
  return at == nodes.end() ? -1 : static_cast<int>(at - nodes.begin());
}

namespace {

// Whether the `node_index`-th node of a gang hosts `rank`.
bool NodeHostsRank(int node_index, int ranks_per_node, int32_t rank) {
  return node_index >= 0 && rank >= node_index * ranks_per_node &&
         rank < (node_index + 1) * ranks_per_node;
}

}  // namespace

bool RunRecord::HostsRank(const std::string& node, int32_t rank) const {
  return NodeHostsRank(NodeIndex(node), run.spec().ranks_per_node(), rank);
}

bool RunRecord::HostedRank(int32_t attempt, const std::string& node,
                           int32_t rank) const {
  for (const v1::Attempt& past : run.attempts()) {
    if (past.number() != attempt) continue;
    const auto at = std::find(past.nodes().begin(), past.nodes().end(), node);
    if (at == past.nodes().end()) return false;
    return NodeHostsRank(static_cast<int>(at - past.nodes().begin()),
                         run.spec().ranks_per_node(), rank);
  }
  return false;
}

v1::CoordinatorMessage RunRecord::AssignmentFor(v1::Assignment::Phase phase,
                                                int32_t node_rank) const {
  v1::CoordinatorMessage message;
  v1::Assignment* assignment = message.mutable_assignment();
  assignment->set_phase(phase);
  *assignment->mutable_key() = key();
  *assignment->mutable_spec() = run.spec();
  assignment->set_world_size(world_size());
  assignment->set_node_rank(node_rank);
  const int rpn = run.spec().ranks_per_node();
  for (int r = 0; r < rpn; ++r) assignment->add_ranks(node_rank * rpn + r);
  if (run.attempts_size() > 0) {
    const v1::Attempt& attempt = *run.attempts().rbegin();
    assignment->set_resume_from_attempt(attempt.resume_from_attempt());
    assignment->set_resume_from_epoch(attempt.resume_from_epoch());
  }
  return message;
}

v1::Attempt& RunRecord::BeginAttempt(const std::vector<std::string>& gang,
                                     int64_t now_ms,
                                     int32_t resume_from_attempt,
                                     int32_t resume_from_epoch) {
  v1::Attempt* attempt = run.add_attempts();
  attempt->set_number(run.attempts_size());
  attempt->set_state("starting");
  attempt->set_resume_from_attempt(resume_from_attempt);
  attempt->set_resume_from_epoch(resume_from_epoch);
  for (const std::string& node : gang) attempt->add_nodes(node);
  attempt->set_started_ms(now_ms);
  ForgetAttempt(gang);
  carried_epochs.clear();
  run.clear_epochs();
  run.clear_reason();
  run.set_state(v1::RUN_STATE_STARTING);
  if (run.started_ms() == 0) run.set_started_ms(now_ms);
  return *attempt;
}

v1::Attempt& RunRecord::current_attempt() {
  return *run.mutable_attempts()->Mutable(run.attempts_size() - 1);
}

v1::Attempt& RunRecord::BeginRunning(const std::string& host, int32_t port) {
  start_sent = true;
  v1::Attempt* attempt = &current_attempt();
  attempt->set_master_addr(host);
  attempt->set_master_port(port);
  attempt->set_state("running");
  run.set_state(v1::RUN_STATE_RUNNING);
  return *attempt;
}

void RunRecord::End(v1::RunState state, const std::string& error,
                    int64_t now_ms) {
  run.set_state(state);
  run.set_finished_ms(now_ms);
  if (state != v1::RUN_STATE_SUCCEEDED) run.set_error(error);
  run.clear_reason();
  if (run.attempts_size() > 0) {
    v1::Attempt& attempt = current_attempt();
    attempt.set_state(RunStateName(state));
    attempt.set_finished_ms(now_ms);
    if (state != v1::RUN_STATE_SUCCEEDED) attempt.set_error(error);
  }
}

void RunRecord::Requeue(const std::string& why, int64_t now_ms) {
  v1::Attempt& attempt = current_attempt();
  attempt.set_state("requeued");
  attempt.set_finished_ms(now_ms);
  attempt.set_error(why);
  run.set_state(v1::RUN_STATE_QUEUED);
  ForgetAttempt(/*gang=*/{});
}

void RunRecord::ForgetAttempt(std::vector<std::string> gang) {
  nodes = std::move(gang);
  start_sent = false;
  exits.clear();
  all_exited_ms = 0;
  tracker.Reset();
  events_unstored = false;
  waiting_for_events = false;
}

void RunRecord::RefreshEpochs(const std::string& metric, bool flush) {
  if (tracker.empty()) return;
  run.clear_epochs();
  for (const v1::EpochSummary& epoch : carried_epochs) {
    *run.add_epochs() = epoch;
  }
  for (const v1::EpochSummary& epoch : tracker.Epochs()) {
    *run.add_epochs() = epoch;
  }
  const size_t world = static_cast<size_t>(world_size());
  for (const v1::EpochSummary& epoch : tracker.TakeEpochsToLog(world, flush)) {
    log.push_back(EpochLine(epoch, run.spec().epochs(), metric));
  }
}

void RunRecord::Changed(std::string log_line) {
  if (!log_line.empty()) log.push_back(std::move(log_line));
  ++version;
}

std::optional<v1::RunUpdate> RunRecord::UpdateSince(
    RunWatchCursor& cursor) const {
  if (version <= cursor.version) return std::nullopt;
  v1::RunUpdate update;
  *update.mutable_run() = run;
  for (size_t i = cursor.log_sent; i < log.size(); ++i) {
    update.add_log(log[i]);
  }
  update.set_final(IsTerminal(run.state()));
  cursor.version = version;
  cursor.log_sent = log.size();
  return update;
}

}  // namespace hpcai500
