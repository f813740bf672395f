// Node health (docs/design.md "Node health"): bad nodes found before they
// cost a run. Three sources of evidence, one outlier rule
// (methodology/outliers.h):
//   - pre-flights: the coordinator orders a node's agent to measure it
//     (PreflightOrder; the worker's `preflight` mode), stores what comes
//     back with the node's history, and judges each figure against the
//     node's own earlier figures and the newest figures of the nodes of its
//     inventory class;
//   - stragglers: when a run ends, each rank's own time per sample in each
//     epoch (compute + input wait - communication wait, from its
//     hpcai500_epoch_stats) against its peers';
//   - both record an incident against the node (its history) and flag it
//     with the evidence; with drain_on_flag the node is drained too, the
//     evidence its reason. A flagged node gets no ranked run unless the run
//     is pinned to it; `resume` clears the flag.
//
// Not thread-safe: a part of the Coordinator, called with its state's mutex
// held (the Await of a pre-flight releases it while it waits).
#ifndef HPCAI500_SERVER_COORDINATOR_NODE_HEALTH_H_
#define HPCAI500_SERVER_COORDINATOR_NODE_HEALTH_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "common/events.h"
#include "methodology/outliers.h"
#include "proto/hpcai500.pb.h"
#include "server/coordinator/coordinator_state.h"
#include "server/coordinator/run_record.h"

namespace hpcai500 {

// The class a node is compared with: its GPUs' model and count, or without
// GPUs its CPU model and core count ("NVIDIA H100 x8", "AMD EPYC 7763 (64
// cores)"); "" when the inventory says neither.
std::string InventoryClass(const v1::Inventory& inventory);

// Each rank's own time per sample in each epoch of `events` (one attempt's):
// from hpcai500_epoch_stats, (compute + input wait - comm wait) / samples;
// epochs without samples are left out. Pure.
std::vector<RankEpochTime> RankTimes(const std::vector<EventLine>& events);

// `result` judged: each figure against `history` (the node's earlier
// results, any order; failed ones are skipped) and against `peers` (recent
// results of the other nodes of its class) with itself; flagged with the
// evidence ("gemm_gflops 41.2 GFLOP/s: -52% (z -30.1) against the median
// 85.3 GFLOP/s of 11 pre-flights of its class") when any figure is an
// outlier on the low side. Pure.
v1::PreflightResult JudgePreflight(
    v1::PreflightResult result, const std::vector<v1::PreflightResult>& history,
    const std::vector<v1::PreflightResult>& peers, const OutlierRule& rule);

class NodeHealth {
 public:
  // `state` is borrowed and must outlive this.
  explicit NodeHealth(CoordinatorState* state) : state_(*state) {}
  NodeHealth(const NodeHealth&) = delete;
  NodeHealth& operator=(const NodeHealth&) = delete;

  // Restores the flags from the store into the node table and the
  // scheduler (nodes not known are left out).
  absl::Status RestoreLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu);

  // At the end of `record`'s current attempt (its tracker still holds the
  // events): records each persistent straggler as an incident against the
  // node that hosted the rank, in the run's log, and flags that node when
  // flag_stragglers.
  void RecordStragglersLocked(RunRecord& record)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu);

  // Orders a pre-flight of each of `nodes` (connected, known: else
  // InvalidArgument / FailedPrecondition naming it) and waits, releasing
  // the mutex, until every one answered or preflight_timeout_ms plus 5 s
  // passed; a node that did not answer gets a result with that error.
  // Returns the results judged and stored, in the order of `nodes`.
  absl::StatusOr<std::vector<v1::PreflightResult>> RunLocked(
      const std::vector<std::string>& nodes)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu);

  // What node `node`'s agent answered to an order.
  void HandleDoneLocked(const std::string& node, const v1::PreflightDone& done)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu);

  // Clears `node`'s flag (stored); `resume` calls it.
  void ClearFlagLocked(const std::string& node)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu);

  // Fills the health fields of each of `views` (flag, incidents, last
  // pre-flight) from the node table and the store (two reads for all).
  void DecorateLocked(google::protobuf::RepeatedPtrField<v1::Node>& views)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu);

 private:
  // Flags `node` (stored; the scheduler told), records `incident` against
  // it, and drains it when drain_on_flag.
  void FlagLocked(const std::string& node, const v1::NodeIncident& incident)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu);
  // Judges the results of one batch of orders (each against its node's
  // history and the recent results of every other node of its class, this
  // batch's included), acts on the flagged ones, then stores them all.
  void FinishLocked(std::vector<v1::PreflightResult>& results)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu);

  CoordinatorState& state_;
  // Orders waiting for their answer: id -> node, and what came back.
  int64_t next_order_ = 1;
  std::map<int64_t, std::string> pending_ ABSL_GUARDED_BY(state_.mu);
  std::map<int64_t, v1::PreflightResult> done_ ABSL_GUARDED_BY(state_.mu);
};

}  // namespace hpcai500

#endif  // HPCAI500_SERVER_COORDINATOR_NODE_HEALTH_H_
