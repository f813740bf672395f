// The gang scheduler: first come, first served over the nodes' rank slots.
// A run needs `nodes` distinct nodes with `ranks_per_node` free slots each,
// all at once or not at all. The oldest run that the schedulable nodes could
// hold blocks every run behind it, so a large run is never starved by
// smaller ones; a run larger than the schedulable nodes could ever hold
// blocks nothing and waits, with its reason, for nodes to join. The queue is
// kept in run id (submission) order, so a requeued run goes back where it
// was.
//
// Not thread-safe: the Coordinator owns one and guards it with its mutex.
#ifndef HPCAI500_SERVER_SCHEDULER_H_
#define HPCAI500_SERVER_SCHEDULER_H_

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace hpcai500 {

class Scheduler {
 public:
  struct Placement {
    int64_t run_id = 0;
    std::vector<std::string> nodes;  // node-major rank order: node i hosts
                                     // ranks i*rpn .. i*rpn+rpn-1
  };

  // Adds a node or updates its slot count and whether new runs may be
  // placed on it. A disconnected node keeps the slots it holds.
  void SetNode(const std::string& name, int slots, bool schedulable);

  // Adds a run to the queue in run id order. A run already queued or placed
  // is ignored.
  void Enqueue(int64_t run_id, int nodes, int ranks_per_node);
  // Removes a queued run; false when it is not queued.
  bool Dequeue(int64_t run_id);

  // Places queued runs in order while each fits, taking their slots, and
  // notes why each run left in the queue waits (Reason()). Nodes are chosen
  // in name order among the schedulable ones.
  std::vector<Placement> Schedule();

  // Why a queued run waits after the last Schedule() (squeue's reason
  // column): "Resources: ..." or "Priority: ..."; "" when not queued.
  std::string Reason(int64_t run_id) const;

  // How many known nodes (schedulable ones only, or also those that left)
  // have at least `slots` slots.
  int NodesWithSlots(int slots, bool schedulable_only) const;
  // The number of known nodes.
  int node_count() const { return static_cast<int>(nodes_.size()); }

  // Marks `ranks_per_node` slots on each of `nodes` as held by `run_id`
  // (a run restored after a restart). Unknown nodes are added with zero
  // slots, unschedulable, until they register.
  void Hold(int64_t run_id, const std::vector<std::string>& nodes,
            int ranks_per_node);
  // Frees every slot the run holds; no-op when it holds none.
  void Release(int64_t run_id);

  int queue_length() const { return static_cast<int>(queue_.size()); }
  // Slots held on `node` (0 for an unknown node).
  int used_slots(const std::string& node) const;
  bool IsQueued(int64_t run_id) const;

 private:
  struct NodeSlots {
    int slots = 0;
    int used = 0;
    bool schedulable = false;
  };
  struct Request {
    int64_t run_id;
    int nodes;
    int ranks_per_node;
  };
  struct Holding {
    std::vector<std::string> nodes;
    int ranks_per_node = 0;
  };

  std::map<std::string, NodeSlots> nodes_;
  std::deque<Request> queue_;
  std::map<int64_t, Holding> held_;
  std::map<int64_t, std::string> reasons_;  // queued run -> why it waits
};

}  // namespace hpcai500

#endif  // HPCAI500_SERVER_SCHEDULER_H_
