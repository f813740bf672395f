#include "server/scheduler.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace hpcai500 {

void Scheduler::SetNode(const std::string& name, int slots, bool schedulable) {
  NodeSlots& node = nodes_[name];
  node.slots = slots;
  node.schedulable = schedulable;
}

void Scheduler::Enqueue(int64_t run_id, int nodes, int ranks_per_node) {
  if (IsQueued(run_id) || held_.count(run_id) > 0) return;
  auto later =
      std::find_if(queue_.begin(), queue_.end(),
                   [&](const Request& r) { return r.run_id > run_id; });
  queue_.insert(later, Request{run_id, nodes, ranks_per_node});
}

bool Scheduler::Dequeue(int64_t run_id) {
  auto it = std::find_if(queue_.begin(), queue_.end(),
                         [&](const Request& r) { return r.run_id == run_id; });
  if (it == queue_.end()) return false;
  queue_.erase(it);
  reasons_.erase(run_id);
  return true;
}

bool Scheduler::IsQueued(int64_t run_id) const {
  return std::any_of(queue_.begin(), queue_.end(),
                     [&](const Request& r) { return r.run_id == run_id; });
}

std::vector<Scheduler::Placement> Scheduler::Schedule() {
  std::vector<Placement> placed;
  reasons_.clear();
  int64_t blocker = 0;  // the oldest run that could fit but does not yet
  for (auto it = queue_.begin(); it != queue_.end();) {
    const Request& request = *it;
    const int capacity =
        NodesWithSlots(request.ranks_per_node, /*schedulable_only=*/true);
    if (capacity < request.nodes) {
      reasons_[request.run_id] = absl::StrFormat(
          "Resources: needs %d nodes with %d slots; %d connected node(s) "
          "have that many",
          request.nodes, request.ranks_per_node, capacity);
      ++it;
      continue;
    }
    if (blocker != 0) {
      reasons_[request.run_id] =
          absl::StrCat("Priority: waits behind run ", blocker);
      ++it;
      continue;
    }
    std::vector<std::string> chosen;
    for (const auto& [name, node] : nodes_) {
      if (static_cast<int>(chosen.size()) == request.nodes) break;
      if (node.schedulable &&
          node.slots - node.used >= request.ranks_per_node) {
        chosen.push_back(name);
      }
    }
    if (static_cast<int>(chosen.size()) < request.nodes) {
      blocker = request.run_id;
      reasons_[request.run_id] =
          absl::StrFormat("Resources: waiting for %d nodes with %d free slots",
                          request.nodes, request.ranks_per_node);
      ++it;
      continue;
    }
    Hold(request.run_id, chosen, request.ranks_per_node);
    placed.push_back(Placement{request.run_id, std::move(chosen)});
    it = queue_.erase(it);
  }
  return placed;
}

std::string Scheduler::Reason(int64_t run_id) const {
  auto it = reasons_.find(run_id);
  return it == reasons_.end() ? "" : it->second;
}

int Scheduler::NodesWithSlots(int slots, bool schedulable_only) const {
  int count = 0;
  for (const auto& [name, node] : nodes_) {
    if ((node.schedulable || !schedulable_only) && node.slots >= slots) {
      ++count;
    }
  }
  return count;
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
