// The Coordinator's shared steps on its state: see coordinator_state.h.
#include "server/coordinator/coordinator_state.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "common/run_state.h"
#include "common/status_macros.h"
#include "common/vocabulary.h"
#include "methodology/spec.h"

namespace hpcai500 {

CoordinatorState::CoordinatorState(Store* store, Clock* clock,
                                   const Registry* registry,
                                   CoordinatorOptions options)
    : store(store),
      clock(clock),
      registry(registry),
      options(options),
      scheduler(options.queues.empty() ? Scheduler()
                                       : Scheduler(options.queues)),
      intake(store, clock),
      maintenance(store) {}

void CoordinatorState::PersistLocked(RunRecord& record) {
  absl::Status status = store->UpdateRun(record.run);
  if (status.ok() && record.run.attempts_size() > 0) {
    status =
        store->SaveAttempt(record.run.id(), *record.run.attempts().rbegin());
  }
  // Logged once a spell: Tick tries again every second.
  if (!status.ok() && !record.unsaved) {
    LogError(absl::StrCat("run ", record.run.id(), ": storing its state: ",
                          status.ToString(), " (tried again every tick)"));
  } else if (status.ok() && record.unsaved) {
    LogInfo(absl::StrCat("run ", record.run.id(), ": its state is stored"));
  }
  record.unsaved = !status.ok();
}

void CoordinatorState::SendLocked(const std::string& node,
                                  const v1::CoordinatorMessage& message) {
  if (!nodes.Send(node, message)) {
    LogWarning(absl::StrCat("node ", node, ": not connected; message dropped"));
  }
}

RunRecord* CoordinatorState::CurrentAttemptLocked(const v1::AttemptKey& key) {
  auto it = runs.find(key.run_id());
  if (it == runs.end() || !IsPlaced(it->second.run.state())) return nullptr;
  if (it->second.key().attempt() != key.attempt()) return nullptr;
  return &it->second;
}

absl::StatusOr<RunRecord*> CoordinatorState::RecordLocked(int64_t run_id) {
  auto it = runs.find(run_id);
  if (it != runs.end()) return &it->second;
  ASSIGN_OR_RETURN(v1::Run run, store->GetRun(run_id));
  const std::string metric = MetricName(run.spec());
  RunRecord& record = runs[run_id] =
      RunRecord::FromStored(std::move(run), metric);
  return &record;
}

Scheduler::Request CoordinatorState::RequestFor(const v1::Run& run) {
  const v1::RunSpec& spec = run.spec();
  Scheduler::Request request;
  request.run_id = run.id();
  request.queue = run.queue();
  request.priority = run.priority();
  request.nodes = spec.nodes();
  request.ranks_per_node = spec.ranks_per_node();
  request.gpus_per_node =
      spec.device() == Name(Device::kCuda) ? spec.ranks_per_node() : 0;
  request.constraints.insert(spec.constraints().begin(),
                             spec.constraints().end());
  request.time_limit_ms = spec.time_limit_s() * 1000;
  request.held = !run.held_by().empty();
  request.ranked = spec.ranked();
  request.avoid_flagged =
      spec.ranked() && spec.constraints().count(kNodeLabel) == 0;
  return request;
}

v1::Node CoordinatorState::NodeViewLocked(const NodeTable::Node& node) {
  v1::Node view = node.info;
  const std::string& name = node.info.name();
  view.set_connected(node.session != 0);
  const int used = scheduler.used_slots(name);
  view.set_used_slots(used);
  view.clear_queues();
  for (const std::string& queue : scheduler.QueuesOf(name)) {
    view.add_queues(queue);
  }
  view.clear_state_reason();
  if (node.leaving) {
    view.set_state("down");
    view.set_state_reason(
        absl::StrCat(NodeTable::kLeftReasonPrefix, node.leave_reason));
  } else if (node.draining) {
    view.set_state(used > 0 ? "draining" : "drained");
    view.set_state_reason(node.drain_reason);
  } else if (node.session == 0) {
    view.set_state("down");
    view.set_state_reason("not connected");
  } else if (!scheduler.IsSchedulable(name)) {
    view.set_state("down");
    view.set_state_reason("silent past the node timeout");
  } else {
    view.set_state(used > 0 ? "busy" : "idle");
  }
  return view;
}

void CoordinatorState::SaveNodeLocked(const NodeTable::Node& node) {
  absl::Status saved = store->SaveNode(NodeViewLocked(node));
  if (!saved.ok()) LogError(saved.ToString());
}

void CoordinatorState::OfferNodeLocked(const v1::Node& info) {
  Scheduler::NodeOffer offer;
  offer.slots = info.slots();
  offer.gpus = info.gpus();
  offer.labels.insert(info.labels().begin(), info.labels().end());
  offer.labels[kNodeLabel] = info.name();  // constraints may pin to a node
  scheduler.SetNode(info.name(), offer);
}

std::string CoordinatorState::MetricName(const v1::RunSpec& spec) const {
  const WorkloadInfo* workload = registry->FindWorkload(spec.workload());
  return workload != nullptr ? workload->metric : "quality";
}

}  // namespace hpcai500
