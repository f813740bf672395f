#include "server/scheduler.h"

#include <algorithm>

namespace hpcai500 {

void Scheduler::SetNode(const std::string& name, int slots, bool schedulable) {
  NodeSlots& node = nodes_[name];
  node.slots = slots;
  node.schedulable = schedulable;
}

void Scheduler::Enqueue(int64_t run_id, int nodes, int ranks_per_node) {
  if (IsQueued(run_id) || held_.count(run_id) > 0) return;
  queue_.push_back(Request{run_id, nodes, ranks_per_node});
}

bool Scheduler::Dequeue(int64_t run_id) {
  auto it = std::find_if(queue_.begin(), queue_.end(),
                         [&](const Request& r) { return r.run_id == run_id; });
  if (it == queue_.end()) return false;
  queue_.erase(it);
  return true;
}

bool Scheduler::IsQueued(int64_t run_id) const {
  return std::any_of(queue_.begin(), queue_.end(),
                     [&](const Request& r) { return r.run_id == run_id; });
}

std::vector<Scheduler::Placement> Scheduler::Schedule() {
  std::vector<Placement> placed;
  while (!queue_.empty()) {
    const Request& head = queue_.front();
    std::vector<std::string> chosen;
    for (const auto& [name, node] : nodes_) {
      if (static_cast<int>(chosen.size()) == head.nodes) break;
      if (node.schedulable && node.slots - node.used >= head.ranks_per_node) {
        chosen.push_back(name);
      }
    }
    if (static_cast<int>(chosen.size()) < head.nodes) break;  // head blocks
    Hold(head.run_id, chosen, head.ranks_per_node);
    placed.push_back(Placement{head.run_id, std::move(chosen)});
    queue_.pop_front();
  }
  return placed;
}

void Scheduler::Hold(int64_t run_id, const std::vector<std::string>& nodes,
                     int ranks_per_node) {
  Release(run_id);
  for (const std::string& name : nodes) nodes_[name].used += ranks_per_node;
  held_[run_id] = Holding{nodes, ranks_per_node};
}

void Scheduler::Release(int64_t run_id) {
  auto it = held_.find(run_id);
  if (it == held_.end()) return;
  for (const std::string& name : it->second.nodes) {
    nodes_[name].used -= it->second.ranks_per_node;
  }
  held_.erase(it);
}

int Scheduler::used_slots(const std::string& node) const {
  auto it = nodes_.find(node);
  return it == nodes_.end() ? 0 : it->second.used;
}

}  // namespace hpcai500
