// The gang scheduler: queues (Slurm's partitions), priorities and EASY
// backfill over the nodes' rank slots.
//
// A run needs `nodes` distinct nodes, each of its queue (the node carries
// the queue's labels), carrying the run's constraint labels, with
// `ranks_per_node` free slots and `gpus_per_node` free GPUs: all at once or
// not at all. Queued runs are taken highest priority first, then oldest (run
// id), so a requeued run goes back where it was. The first run of each
// queue that could run on the nodes up but does not fit now is that queue's
// head: it gets a reservation, the nodes it will start on and when (the
// time limits of the runs holding them say when they end). A later run
// starts now only where it cannot delay a reservation: it ends (by its time
// limit) before the reservation starts, or it uses none of the reserved
// nodes (EASY backfill). A run that no node up could hold blocks nothing
// and waits with its reason.
//
// Incremental: Schedule() does nothing unless something that could let a
// run start changed since the last pass (a node up or freed, a run queued or
// released) or, while a head's reason counts down to its expected start, a
// second went by (so the count stays true as time passes), and within a pass
// runs of the same shape that cannot fit are answered from a memo, so a pass
// over 10,000 waiting runs on full nodes stays in milliseconds. What a pass
// would otherwise walk every node for is kept as it changes: the nodes with a
// free slot, each node's allocations, and per shape how many nodes could hold
// it.
//
// Not thread-safe: the Coordinator owns one and guards it with its mutex.
#ifndef HPCAI500_SERVER_COORDINATOR_SCHEDULER_H_
#define HPCAI500_SERVER_COORDINATOR_SCHEDULER_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace hpcai500 {

using Labels = std::map<std::string, std::string>;

class Scheduler {
 public:
  // A queue: its nodes by label and its priorities.
  struct Queue {
    std::string name;
    Labels node_labels;      // a node carrying all of them is the queue's
    int32_t priority = 100;  // a run's default
    int32_t max_priority = 1000;
    int64_t max_time_limit_s = 0;  // 0: none
    bool is_default = false;
    // > 0: a ranked run of several nodes starts only on nodes whose last
    // good pre-flight (node health) is at most this old.
    int64_t preflight_max_age_s = 0;
  };
  // What a node offers.
  struct NodeOffer {
    int slots = 0;
    int gpus = 0;
    Labels labels;
  };
  // What a run asks for.
  struct Request {
    int64_t run_id = 0;
    std::string queue;  // a known queue's name
    int32_t priority = 0;
    int nodes = 1;
    int ranks_per_node = 1;  // at least 1 (CheckRunFields)
    int gpus_per_node = 0;   // device cuda: ranks_per_node
    Labels constraints;
    int64_t time_limit_ms = 0;  // 0: none (it may run forever)
    bool held = false;
    // A ranked run not pinned to a node: flagged nodes are not for it
    // (server/coordinator/node_health.h).
    bool avoid_flagged = false;
    // A ranked run: its queue's preflight_max_age applies when it spans
    // several nodes.
    bool ranked = false;
  };
  struct Placement {
    int64_t run_id = 0;
    std::vector<std::string> nodes;  // node-major rank order: node i hosts
                                     // ranks i*rpn .. i*rpn+rpn-1
    bool backfilled = false;         // started ahead of a waiting run
  };
  // Counts of a queue's nodes and runs (sinfo's view).
  struct QueueLoad {
    int nodes = 0;
    int idle_nodes = 0;
    int queued_runs = 0;
    int running_runs = 0;
  };

  // One default queue, "default", over every node.
  Scheduler();
  // `queues` must have unique names and exactly one default (ParseQueues
  // checks it).
  explicit Scheduler(std::vector<Queue> queues);

  const std::vector<Queue>& queues() const { return queues_; }
  // The queue named `name`, or the default one for "" ; null when unknown.
  const Queue* FindQueue(const std::string& name) const;

  // Adds a node or updates what it offers; a new node is not schedulable.
  void SetNode(const std::string& name, const NodeOffer& offer);
  // Forgets a node that holds no slots; false (and kept) when it holds
  // some or is unknown.
  bool RemoveNode(const std::string& name);
  // Whether new runs may be placed on the node (it is connected and heard).
  // A node that is not keeps the slots it holds.
  void SetSchedulable(const std::string& name, bool schedulable);
  // A draining node gets no new run; what it runs goes on.
  void SetDraining(const std::string& name, bool draining);
  bool IsDraining(const std::string& name) const;
  // A flagged node (node health) gets no run that avoids flagged nodes.
  void SetFlagged(const std::string& name, bool flagged);
  // When the node's last good pre-flight was measured (Unix ms; 0: never).
  void SetPreflightMs(const std::string& name, int64_t measured_ms);
  // The pre-flights' ages are judged at `now_ms` from now on (call it from
  // the clock's tick): a node whose pre-flight grew too old for a queue's
  // preflight_max_age stops being eligible for that queue's multi-node
  // ranked runs.
  void AgePreflights(int64_t now_ms);
  bool IsSchedulable(const std::string& name) const;

  // Adds a run to the queue. A run already queued or placed is ignored.
  void Enqueue(const Request& request);
  // Removes a queued run; false when it is not queued.
  bool Dequeue(int64_t run_id);
  // Holds or releases a queued run; false when it is not queued.
  bool SetHeld(int64_t run_id, bool held);
  bool IsQueued(int64_t run_id) const;
  // The queued runs' ids, in ascending order.
  std::vector<int64_t> QueuedRunIds() const;

  // Places what can start at `now_ms` (see the top of this file), taking
  // their slots, and notes why each run left waits (Reason()).
  std::vector<Placement> Schedule(int64_t now_ms);
  // How many passes Schedule() made (it skips when nothing changed and no
  // reason counts down).
  int64_t passes() const { return passes_; }

  // Why a queued run waits after the last pass (squeue's reason column),
  // one of "Held", "Constraints: ...", "Resources: ...", "Priority: ...";
  // "" when not queued or not yet looked at. The reference is valid until
  // the next call of a non-const method.
  const std::string& Reason(int64_t run_id) const;

  // What `request` asks of the nodes, in one line: "2 node(s) of queue gpu
  // with 8 slot(s) and 8 GPU(s) labelled rack=3", saying "free slot(s)" and
  // "free GPU(s)" when `free` (what a waiting run waits for). The one
  // wording of the waiting reasons and of Submit's refusal.
  std::string Needs(const Request& request, bool free) const;

  // How many known nodes (up ones only: schedulable and not draining, or
  // every one) could ever host one node's share of `request`.
  int EligibleNodes(const Request& request, bool up_only) const;
  // The number of known nodes.
  int node_count() const { return static_cast<int>(nodes_.size()); }

  // Marks the run's share as held on each of `nodes` from `start_ms` until
  // `end_ms` (0: unknown). Unknown nodes are added offering nothing, not
  // schedulable, until they register (a run restored after a restart).
  void Allocate(int64_t run_id, const std::string& queue,
                const std::vector<std::string>& nodes, int ranks_per_node,
                int gpus_per_node, int64_t start_ms, int64_t end_ms);
  // Frees everything the run holds; no-op when it holds nothing.
  void Deallocate(int64_t run_id);

  int queue_length() const { return static_cast<int>(requests_.size()); }
  // Slots held on `node` (0 for an unknown node).
  int used_slots(const std::string& node) const;
  // The names of the queues `node` is in.
  std::vector<std::string> QueuesOf(const std::string& node) const;
  QueueLoad Load(const std::string& queue) const;

 private:
  struct NodeState {
    NodeOffer offer;
    bool schedulable = false;
    bool draining = false;
    bool flagged = false;
    int64_t preflight_ms = 0;
    int used_slots = 0;
    int used_gpus = 0;
    std::vector<int64_t> runs;  // the allocations holding some of it
  };
  struct Allocation {
    std::string queue;
    std::vector<std::string> nodes;
    int ranks_per_node = 0;
    int gpus_per_node = 0;
    int64_t start_ms = 0;
    int64_t end_ms = 0;  // 0: unknown
  };
  // A queue head's promise: it starts on `nodes` at `start_ms` (kNever:
  // unknown, a run in the way has no time limit).
  struct Reservation {
    int64_t run_id = 0;
    int64_t start_ms = 0;
    std::set<std::string> nodes;
  };
  // Queue order: highest priority first, then oldest.
  using OrderKey = std::pair<int32_t, int64_t>;  // (-priority, run_id)

  static constexpr int64_t kNever = INT64_MAX;

  const Queue& QueueOf(const Request& request) const;
  // Whether `node` could ever host one node's share of `request`.
  bool Eligible(const NodeState& node, const Request& request) const;
  // Whether `request` needs a fresh pre-flight of its queue's nodes, and
  // whether `node`'s is fresh enough for `queue` at `now_ms`.
  static bool NeedsFreshPreflight(const Request& request, const Queue& queue);
  static bool PreflightFresh(const NodeState& node, const Queue& queue,
                             int64_t now_ms);
  bool Up(const NodeState& node) const {
    return node.schedulable && !node.draining;
  }
  bool FreeFor(const NodeState& node, const Request& request) const;
  // When `node` will have room for `request` by the time limits of what
  // it runs (kNever when a run in the way has none).
  int64_t ReadyMs(const NodeState& node, const Request& request,
                  int64_t now_ms) const;
  Reservation Reserve(const Request& request, int64_t now_ms) const;
  // The id of the request's shape (queue, constraints, ranks, GPUs, time
  // limit): runs of one shape that cannot start share the answer.
  int ShapeOf(const Request& request);
  // A node came or went, or changed what it offers or whether it is up.
  void NodesChanged();
  // Keeps free_nodes_ in step with `node`'s slots.
  void NoteFree(const std::string& name, const NodeState& node);

  std::vector<Queue> queues_;
  std::map<std::string, NodeState> nodes_;
  // Queued runs by id, with their shape.
  std::map<int64_t, std::pair<Request, int>> requests_;
  std::map<std::string, int> shapes_;
  std::set<OrderKey> order_;
  std::map<int64_t, Allocation> allocations_;
  // The nodes with a free slot (every request asks at least one).
  std::set<std::string> free_nodes_;
  // Shape -> (eligible known nodes, eligible nodes up); emptied by
  // NodesChanged().
  std::map<int, std::pair<int, int>> eligible_;
  // Queued run -> why it waits; each pass sets every queued run's.
  std::map<int64_t, std::string> reasons_;
  bool dirty_ = true;
  int64_t passes_ = 0;
  // When the last pass was made, and whether a reason it gave counts down
  // to an expected start ("expected to start within N s"): such a reason is
  // told again once a second went by.
  int64_t last_pass_ms_ = 0;
  bool counts_down_ = false;
  // The time pre-flight ages are judged at (AgePreflights).
  int64_t preflight_now_ms_ = 0;
};

}  // namespace hpcai500

#endif  // HPCAI500_SERVER_COORDINATOR_SCHEDULER_H_
