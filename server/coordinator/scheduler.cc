#include "server/coordinator/scheduler.h"

#include <algorithm>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace hpcai500 {
namespace {

// Whether `labels` carries every key=value of `wanted`.
bool Carries(const Labels& labels, const Labels& wanted) {
  for (const auto& [key, value] : wanted) {
    auto it = labels.find(key);
    if (it == labels.end() || it->second != value) return false;
  }
  return true;
}

// The step of Seconds(): a countdown it writes changes once a second.
constexpr int64_t kCountdownStepMs = 1000;

std::string Seconds(int64_t ms) {
  return absl::StrCat((ms + kCountdownStepMs - 1) / kCountdownStepMs, " s");
}

}  // namespace

Scheduler::Scheduler()
    : Scheduler({Queue{"default", {}, 100, 1000, 0, /*is_default=*/true}}) {}

Scheduler::Scheduler(std::vector<Queue> queues) : queues_(std::move(queues)) {}

const Scheduler::Queue* Scheduler::FindQueue(const std::string& name) const {
  for (const Queue& queue : queues_) {
    if (name.empty() ? queue.is_default : queue.name == name) return &queue;
  }
  return nullptr;
}

const Scheduler::Queue& Scheduler::QueueOf(const Request& request) const {
  // A queue that went away since the run was queued: the default one.
  const Queue* queue = FindQueue(request.queue);
  if (queue == nullptr) queue = FindQueue("");
  return queue != nullptr ? *queue : queues_.front();
}

void Scheduler::NodesChanged() {
  eligible_.clear();
  dirty_ = true;
}

void Scheduler::NoteFree(const std::string& name, const NodeState& node) {
  if (node.used_slots < node.offer.slots) {
    free_nodes_.insert(name);
  } else {
    free_nodes_.erase(name);
  }
}

void Scheduler::SetNode(const std::string& name, const NodeOffer& offer) {
  NodeState& node = nodes_[name];
  node.offer = offer;
  NoteFree(name, node);
  NodesChanged();
}

bool Scheduler::RemoveNode(const std::string& name) {
  auto it = nodes_.find(name);
  if (it == nodes_.end() || it->second.used_slots > 0) return false;
  nodes_.erase(it);
  free_nodes_.erase(name);
  NodesChanged();  // the waiting reasons count the nodes
  return true;
}

void Scheduler::SetSchedulable(const std::string& name, bool schedulable) {
  NodeState& node = nodes_[name];
  if (node.schedulable == schedulable) return;
  node.schedulable = schedulable;
  NodesChanged();
}

void Scheduler::SetDraining(const std::string& name, bool draining) {
  NodeState& node = nodes_[name];
  if (node.draining == draining) return;
  node.draining = draining;
  NodesChanged();
}

void Scheduler::SetFlagged(const std::string& name, bool flagged) {
  NodeState& node = nodes_[name];
  if (node.flagged == flagged) return;
  node.flagged = flagged;
  NodesChanged();
}

void Scheduler::SetPreflightMs(const std::string& name, int64_t measured_ms) {
  NodeState& node = nodes_[name];
  if (node.preflight_ms == measured_ms) return;
  node.preflight_ms = measured_ms;
  NodesChanged();
}

bool Scheduler::NeedsFreshPreflight(const Request& request,
                                    const Queue& queue) {
  return queue.preflight_max_age_s > 0 && request.ranked && request.nodes > 1;
}

bool Scheduler::PreflightFresh(const NodeState& node, const Queue& queue,
                               int64_t now_ms) {
  return node.preflight_ms > 0 &&
         now_ms - node.preflight_ms <= queue.preflight_max_age_s * 1000;
}

void Scheduler::AgePreflights(int64_t now_ms) {
  bool changed = false;
  for (const Queue& queue : queues_) {
    if (queue.preflight_max_age_s == 0) continue;
    for (const auto& [name, node] : nodes_) {
      changed = changed || PreflightFresh(node, queue, preflight_now_ms_) !=
                               PreflightFresh(node, queue, now_ms);
    }
  }
  preflight_now_ms_ = now_ms;
  if (changed) NodesChanged();
}

bool Scheduler::IsDraining(const std::string& name) const {
  auto it = nodes_.find(name);
  return it != nodes_.end() && it->second.draining;
}

bool Scheduler::IsSchedulable(const std::string& name) const {
  auto it = nodes_.find(name);
  return it != nodes_.end() && it->second.schedulable;
}

int Scheduler::ShapeOf(const Request& request) {
  const std::string key = absl::StrCat(
      QueueOf(request).name, "|",
      absl::StrJoin(request.constraints, ",", absl::PairFormatter("=")), "|",
      request.ranks_per_node, "|", request.gpus_per_node, "|",
      request.time_limit_ms, "|", request.avoid_flagged, "|",
      NeedsFreshPreflight(request, QueueOf(request)));
  return shapes_.emplace(key, static_cast<int>(shapes_.size())).first->second;
}

void Scheduler::Enqueue(const Request& request) {
  if (requests_.count(request.run_id) > 0 ||
      allocations_.count(request.run_id) > 0) {
    return;
  }
  requests_[request.run_id] = {request, ShapeOf(request)};
  order_.insert({-request.priority, request.run_id});
  dirty_ = true;
}

bool Scheduler::Dequeue(int64_t run_id) {
  auto it = requests_.find(run_id);
  if (it == requests_.end()) return false;
  order_.erase({-it->second.first.priority, run_id});
  requests_.erase(it);
  reasons_.erase(run_id);
  dirty_ = true;
  return true;
}

bool Scheduler::SetHeld(int64_t run_id, bool held) {
  auto it = requests_.find(run_id);
  if (it == requests_.end()) return false;
  if (it->second.first.held != held) {
    it->second.first.held = held;
    dirty_ = true;
  }
  return true;
}

bool Scheduler::IsQueued(int64_t run_id) const {
  return requests_.count(run_id) > 0;
}

std::vector<int64_t> Scheduler::QueuedRunIds() const {
  std::vector<int64_t> ids;
  ids.reserve(requests_.size());
  for (const auto& entry : requests_) ids.push_back(entry.first);
  return ids;
}

bool Scheduler::Eligible(const NodeState& node, const Request& request) const {
  return node.offer.slots >= request.ranks_per_node &&
         node.offer.gpus >= request.gpus_per_node &&
         !(request.avoid_flagged && node.flagged) &&
         (!NeedsFreshPreflight(request, QueueOf(request)) ||
          PreflightFresh(node, QueueOf(request), preflight_now_ms_)) &&
         Carries(node.offer.labels, QueueOf(request).node_labels) &&
         Carries(node.offer.labels, request.constraints);
}

bool Scheduler::FreeFor(const NodeState& node, const Request& request) const {
  return node.offer.slots - node.used_slots >= request.ranks_per_node &&
         node.offer.gpus - node.used_gpus >= request.gpus_per_node;
}

int Scheduler::EligibleNodes(const Request& request, bool up_only) const {
  int count = 0;
  for (const auto& [name, node] : nodes_) {
    count += Eligible(node, request) && (!up_only || Up(node));
  }
  return count;
}

std::string Scheduler::Needs(const Request& request, bool free) const {
  const char* const free_word = free ? "free " : "";
  std::string needs =
      absl::StrFormat("%d node(s) of queue %s with %d %sslot(s)", request.nodes,
                      QueueOf(request).name, request.ranks_per_node, free_word);
  if (request.gpus_per_node > 0) {
    absl::StrAppend(&needs, " and ", request.gpus_per_node, " ", free_word,
                    "GPU(s)");
  }
  if (NeedsFreshPreflight(request, QueueOf(request))) {
    absl::StrAppend(&needs, " with a pre-flight at most ",
                    QueueOf(request).preflight_max_age_s,
                    " s old (hpcai500 preflight)");
  }
  if (!request.constraints.empty()) {
    absl::StrAppend(
        &needs, " labelled ",
        absl::StrJoin(request.constraints, ",", absl::PairFormatter("=")));
  }
  return needs;
}

int64_t Scheduler::ReadyMs(const NodeState& node, const Request& request,
                           int64_t now_ms) const {
  if (FreeFor(node, request)) return now_ms;
  // What ends on this node, soonest first: (end, ranks, GPUs).
  std::vector<std::tuple<int64_t, int, int>> ends;
  ends.reserve(node.runs.size());
  for (const int64_t run_id : node.runs) {
    const Allocation& allocation = allocations_.at(run_id);
    ends.emplace_back(
        allocation.end_ms == 0 ? kNever : std::max(allocation.end_ms, now_ms),
        allocation.ranks_per_node, allocation.gpus_per_node);
  }
  std::sort(ends.begin(), ends.end());
  int free_slots = node.offer.slots - node.used_slots;
  int free_gpus = node.offer.gpus - node.used_gpus;
  for (const auto& [end, slots, gpus] : ends) {
    if (end == kNever) break;
    free_slots += slots;
    free_gpus += gpus;
    if (free_slots >= request.ranks_per_node &&
        free_gpus >= request.gpus_per_node) {
      return end;
    }
  }
  return kNever;
}

Scheduler::Reservation Scheduler::Reserve(const Request& request,
                                          int64_t now_ms) const {
  std::vector<std::pair<int64_t, const std::string*>> ready;  // (when, node)
  for (const auto& [name, node] : nodes_) {
    if (Up(node) && Eligible(node, request)) {
      ready.emplace_back(ReadyMs(node, request, now_ms), &name);
    }
  }
  // Soonest first; nodes_ is in name order, which ties keep.
  std::stable_sort(
      ready.begin(), ready.end(),
      [](const auto& a, const auto& b) { return a.first < b.first; });
  Reservation reservation;
  reservation.run_id = request.run_id;
  reservation.start_ms = now_ms;
  const size_t count =
      std::min(ready.size(), static_cast<size_t>(request.nodes));
  for (size_t i = 0; i < count; ++i) {
    reservation.start_ms = std::max(reservation.start_ms, ready[i].first);
    reservation.nodes.insert(*ready[i].second);
  }
  return reservation;
}

std::vector<Scheduler::Placement> Scheduler::Schedule(int64_t now_ms) {
  std::vector<Placement> placed;
  const bool count_is_stale =
      counts_down_ && now_ms - last_pass_ms_ >= kCountdownStepMs;
  if (!dirty_ && !count_is_stale) return placed;
  dirty_ = false;
  ++passes_;
  last_pass_ms_ = now_ms;
  counts_down_ = false;
  std::vector<Reservation> reservations;
  // Queue -> what a run waiting behind its head is told.
  std::map<std::string, std::string> behind_head;
  // Shape -> the fewest nodes a run of it failed to get in this pass. A
  // pass only ever takes nodes and adds reservations, so a run of that
  // shape asking as many or more fails too.
  std::map<int, int> no_room;
  for (auto it = order_.begin(); it != order_.end();) {
    const auto& [request, shape] = requests_.at(it->second);
    const int64_t run_id = request.run_id;
    if (request.held) {
      reasons_[run_id] = "Held";
      ++it;
      continue;
    }
    auto counts = eligible_.find(shape);
    if (counts == eligible_.end()) {
      counts = eligible_
                   .emplace(shape, std::make_pair(EligibleNodes(request, false),
                                                  EligibleNodes(request, true)))
                   .first;
    }
    const auto [known, up] = counts->second;
    if (up < request.nodes) {
      // Nothing up could hold it: it waits and blocks nobody.
      reasons_[run_id] =
          known < request.nodes
              ? absl::StrFormat(
                    "Constraints: needs %s; %d registered node(s) "
                    "match",
                    Needs(request, /*free=*/true), known)
              : absl::StrFormat(
                    "Resources: needs %s; %d of the %d "
                    "matching node(s) are up (not down or "
                    "draining)",
                    Needs(request, /*free=*/true), up, known);
      ++it;
      continue;
    }
    std::vector<std::string> chosen;
    auto failed = no_room.find(shape);
    if (failed == no_room.end() || request.nodes < failed->second) {
      // The reserved nodes this run could delay.
      std::set<std::string> reserved;
      for (const Reservation& reservation : reservations) {
        const bool ends_before =
            request.time_limit_ms > 0 && reservation.start_ms != kNever &&
            now_ms + request.time_limit_ms <= reservation.start_ms;
        if (!ends_before) {
          reserved.insert(reservation.nodes.begin(), reservation.nodes.end());
        }
      }
      for (const std::string& name : free_nodes_) {
        if (static_cast<int>(chosen.size()) == request.nodes) break;
        const NodeState& node = nodes_.at(name);
        if (Up(node) && Eligible(node, request) && FreeFor(node, request) &&
            reserved.count(name) == 0) {
          chosen.push_back(name);
        }
      }
    }
    if (static_cast<int>(chosen.size()) == request.nodes) {
      Allocate(run_id, QueueOf(request).name, chosen, request.ranks_per_node,
               request.gpus_per_node, now_ms,
               request.time_limit_ms > 0 ? now_ms + request.time_limit_ms : 0);
      placed.push_back(Placement{run_id, std::move(chosen),
                                 /*backfilled=*/!reservations.empty()});
      ++it;
      order_.erase(std::prev(it));
      requests_.erase(run_id);
      reasons_.erase(run_id);
      continue;
    }
    int& fewest = no_room.emplace(shape, request.nodes).first->second;
    fewest = std::min(fewest, request.nodes);
    const std::string& queue = QueueOf(request).name;
    auto head = behind_head.find(queue);
    if (head != behind_head.end()) {
      reasons_[run_id] = head->second;
    } else {
      behind_head[queue] = absl::StrCat("Priority: waits behind run ", run_id,
                                        " (queue ", queue, ")");
      Reservation reservation = Reserve(request, now_ms);
      counts_down_ = counts_down_ || reservation.start_ms != kNever;
      reasons_[run_id] = absl::StrCat(
          "Resources: waiting for ", Needs(request, /*free=*/true),
          reservation.start_ms == kNever
              ? "; start unknown (a run in the way has no time limit)"
              : absl::StrCat("; expected to start within ",
                             Seconds(reservation.start_ms - now_ms), " on ",
                             absl::StrJoin(reservation.nodes, ", ")));
      reservations.push_back(std::move(reservation));
    }
    ++it;
  }
  return placed;
}

const std::string& Scheduler::Reason(int64_t run_id) const {
  static const std::string* const kNone = new std::string();
  auto it = reasons_.find(run_id);
  return it == reasons_.end() ? *kNone : it->second;
}

void Scheduler::Allocate(int64_t run_id, const std::string& queue,
                         const std::vector<std::string>& nodes,
                         int ranks_per_node, int gpus_per_node,
                         int64_t start_ms, int64_t end_ms) {
  Deallocate(run_id);
  for (const std::string& name : nodes) {
    auto [it, added] = nodes_.try_emplace(name);
    if (added) NodesChanged();
    NodeState& node = it->second;
    node.used_slots += ranks_per_node;
    node.used_gpus += gpus_per_node;
    node.runs.push_back(run_id);
    NoteFree(name, node);
  }
  // A run stored before queues existed (or in a queue since removed)
  // counts as the default queue's.
  const Queue* known = FindQueue(queue);
  if (known == nullptr) known = FindQueue("");
  allocations_[run_id] = Allocation{known != nullptr ? known->name : queue,
                                    nodes,
                                    ranks_per_node,
                                    gpus_per_node,
                                    start_ms,
                                    end_ms};
}

void Scheduler::Deallocate(int64_t run_id) {
  auto it = allocations_.find(run_id);
  if (it == allocations_.end()) return;
  for (const std::string& name : it->second.nodes) {
    NodeState& node = nodes_[name];
    node.used_slots -= it->second.ranks_per_node;
    node.used_gpus -= it->second.gpus_per_node;
    node.runs.erase(std::remove(node.runs.begin(), node.runs.end(), run_id),
                    node.runs.end());
    NoteFree(name, node);
  }
  allocations_.erase(it);
  dirty_ = true;
}

int Scheduler::used_slots(const std::string& node) const {
  auto it = nodes_.find(node);
  return it == nodes_.end() ? 0 : it->second.used_slots;
}

std::vector<std::string> Scheduler::QueuesOf(const std::string& node) const {
  std::vector<std::string> names;
  auto it = nodes_.find(node);
  if (it == nodes_.end()) return names;
  for (const Queue& queue : queues_) {
    if (Carries(it->second.offer.labels, queue.node_labels)) {
      names.push_back(queue.name);
    }
  }
  return names;
}

Scheduler::QueueLoad Scheduler::Load(const std::string& queue_name) const {
  QueueLoad load;
  const Queue* queue = FindQueue(queue_name);
  if (queue == nullptr) return load;
  for (const auto& [name, node] : nodes_) {
    if (!Carries(node.offer.labels, queue->node_labels)) continue;
    ++load.nodes;
    load.idle_nodes += Up(node) && node.used_slots == 0;
  }
  for (const auto& [run_id, entry] : requests_) {
    load.queued_runs += QueueOf(entry.first).name == queue->name;
  }
  for (const auto& [run_id, allocation] : allocations_) {
    load.running_runs += allocation.queue == queue->name;
  }
  return load;
}

}  // namespace hpcai500
