// Node health: pre-flights, stragglers and flags (node_health.h).
#include "server/coordinator/node_health.h"

#include <algorithm>
#include <map>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "common/event_keys.h"
#include "common/log.h"
#include "methodology/scoring.h"

namespace hpcai500 {
namespace {

namespace keys = event_keys;

constexpr char kStraggler[] = "straggler";
constexpr char kPreflight[] = "preflight";
// How many recent pre-flights of each other node of its class a node is
// compared with: more than one each, so that the MAD is the class's spread
// and not the distance between two nodes' one measurement each.
constexpr size_t kClassHistory = 5;
// What the coordinator waits beyond the agent's own timeout for an answer.
constexpr int64_t kAnswerGraceMs = 5'000;

// The unit a figure is printed with.
std::string UnitOf(const std::string& figure) {
  return figure == keys::kPreflightGemmGflops ? "GFLOP/s" : "GB/s";
}

// The values of `figure` in `results` that measured it.
std::vector<double> FigureValues(
    const std::vector<v1::PreflightResult>& results,
    const std::string& figure) {
  std::vector<double> values;
  for (const v1::PreflightResult& r : results) {
    if (!r.error().empty()) continue;
    auto it = r.figures().find(figure);
    if (it != r.figures().end()) values.push_back(it->second);
  }
  return values;
}

}  // namespace

std::string InventoryClass(const v1::Inventory& inventory) {
  if (inventory.devices_size() > 0) {
    return absl::StrCat(inventory.devices(0).model(), " x",
                        inventory.devices_size());
  }
  if (inventory.cpu_model().empty() && inventory.cpu_cores() == 0) return "";
  return absl::StrCat(inventory.cpu_model(), " (", inventory.cpu_cores(),
                      " cores)");
}

std::vector<RankEpochTime> RankTimes(const std::vector<EventLine>& events) {
  std::vector<RankEpochTime> times;
  for (const v1::RankEpoch& e : SummarizeRankEpochs(events, /*attempt=*/0)) {
    if (e.samples() <= 0) continue;
    const double own =
        std::max(0.0, e.compute_seconds() + e.input_wait_seconds() -
                          e.comm_wait_seconds());
    times.push_back(
        {e.rank(), e.epoch(), own / static_cast<double>(e.samples())});
  }
  return times;
}

v1::PreflightResult JudgePreflight(
    v1::PreflightResult result, const std::vector<v1::PreflightResult>& history,
    const std::vector<v1::PreflightResult>& peers, const OutlierRule& rule) {
  result.set_flagged(false);
  result.clear_evidence();
  if (!result.error().empty()) return result;
  std::vector<std::string> evidence;
  std::map<std::string, double> figures(result.figures().begin(),
                                        result.figures().end());
  for (const auto& [figure, value] : figures) {
    const std::string unit = UnitOf(figure);
    const std::string head =
        absl::StrFormat("%s %.4g %s: ", figure, value, unit);
    std::optional<Deviation> own =
        Deviate(value, FigureValues(history, figure), rule);
    if (own.has_value() && IsOutlier(*own, BadSide::kLow, rule)) {
      evidence.push_back(absl::StrCat(head, DeviationText(*own, unit),
                                      " earlier pre-flights of its own"));
      continue;
    }
    // Its class: the other nodes' recent values and this one.
    std::vector<double> class_values = FigureValues(peers, figure);
    class_values.push_back(value);
    std::optional<Deviation> among = Deviate(value, class_values, rule);
    if (among.has_value() && IsOutlier(*among, BadSide::kLow, rule)) {
      evidence.push_back(absl::StrCat(head, DeviationText(*among, unit),
                                      " pre-flights of its class"));
    }
  }
  if (!evidence.empty()) {
    result.set_flagged(true);
    result.set_evidence(absl::StrJoin(evidence, "; "));
  }
  return result;
}

absl::Status NodeHealth::RestoreLocked() {
  absl::StatusOr<std::map<std::string, std::pair<int64_t, std::string>>> flags =
      state_.store->ListFlags();
  if (!flags.ok()) return flags.status();
  for (const auto& [name, flag] : *flags) {
    auto node = state_.nodes.nodes().find(name);
    if (node == state_.nodes.nodes().end()) continue;
    node->second.flagged_ms = flag.first;
    node->second.flag = flag.second;
    state_.scheduler.SetFlagged(name, true);
  }
  absl::StatusOr<std::vector<v1::PreflightResult>> latest =
      state_.store->LatestPreflights();
  if (!latest.ok()) return latest.status();
  for (const v1::PreflightResult& r : *latest) {
    if (r.error().empty() && !r.flagged() &&
        state_.nodes.nodes().count(r.node()) > 0) {
      state_.scheduler.SetPreflightMs(r.node(), r.time_ms());
    }
  }
  return absl::OkStatus();
}

void NodeHealth::RecordStragglersLocked(RunRecord& record) {
  if (record.tracker.empty() || record.nodes.empty()) return;
  const std::vector<Straggler> found = FindStragglers(
      RankTimes(record.tracker.events()), state_.options.node_health.rule);
  for (const Straggler& s : found) {
    std::string node;
    for (const std::string& name : record.nodes) {
      if (record.HostsRank(name, s.rank)) node = name;
    }
    if (node.empty()) continue;
    v1::NodeIncident incident;
    incident.set_node(node);
    incident.set_time_ms(state_.clock->NowMs());
    incident.set_kind(kStraggler);
    incident.set_run_id(record.run.id());
    incident.set_attempt(record.key().attempt());
    incident.set_rank(s.rank);
    incident.set_detail(absl::StrFormat(
        "rank %d slower than its peers in %d of %d epochs; its own time per "
        "sample at worst %s",
        s.rank, s.slow_epochs, s.epochs, DeviationText(s.worst, "s")));
    const std::string line =
        absl::StrCat("straggler: node ", node, ": ", incident.detail());
    LogInfo(absl::StrCat("run ", record.run.id(), " ", line));
    record.Changed(line);
    if (state_.options.node_health.flag_stragglers) {
      FlagLocked(node, incident);
    } else if (absl::StatusOr<int64_t> id = state_.store->AddIncident(incident);
               !id.ok()) {
      LogError(id.status().ToString());
    }
  }
}

void NodeHealth::FlagLocked(const std::string& name,
                            const v1::NodeIncident& incident) {
  absl::StatusOr<int64_t> id = state_.store->AddIncident(incident);
  if (!id.ok()) LogError(id.status().ToString());
  auto it = state_.nodes.nodes().find(name);
  if (it == state_.nodes.nodes().end()) return;
  NodeTable::Node& node = it->second;
  const std::string evidence =
      absl::StrCat(incident.kind(), ": ", incident.detail());
  node.flag = evidence;
  node.flagged_ms = incident.time_ms();
  state_.scheduler.SetFlagged(name, true);
  if (absl::Status saved =
          state_.store->SaveFlag(name, node.flagged_ms, evidence);
      !saved.ok()) {
    LogError(saved.ToString());
  }
  LogInfo(absl::StrCat("node ", name, ": flagged (", evidence, ")"));
  if (state_.options.node_health.drain_on_flag && !node.draining) {
    node.draining = true;
    node.drain_reason = absl::StrCat("flagged by ", evidence);
    state_.scheduler.SetDraining(name, true);
    LogInfo(
        absl::StrCat("node ", name, ": draining (", node.drain_reason, ")"));
  }
  state_.SaveNodeLocked(node);
}

void NodeHealth::ClearFlagLocked(const std::string& name) {
  auto it = state_.nodes.nodes().find(name);
  if (it != state_.nodes.nodes().end()) {
    it->second.flag.clear();
    it->second.flagged_ms = 0;
  }
  state_.scheduler.SetFlagged(name, false);
  if (absl::Status cleared = state_.store->ClearFlag(name); !cleared.ok()) {
    LogError(cleared.ToString());
  }
}

absl::StatusOr<std::vector<v1::PreflightResult>> NodeHealth::RunLocked(
    const std::vector<std::string>& nodes) {
  const NodeHealthOptions& o = state_.options.node_health;
  std::vector<int64_t> orders;
  for (const std::string& name : nodes) {
    auto it = state_.nodes.nodes().find(name);
    if (it == state_.nodes.nodes().end()) {
      return absl::InvalidArgumentError(absl::StrCat("no node ", name));
    }
    if (it->second.session == 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("node ", name, " is not connected"));
    }
  }
  for (const std::string& name : nodes) {
    const int64_t id = next_order_++;
    v1::CoordinatorMessage message;
    v1::PreflightOrder& order = *message.mutable_preflight();
    order.set_id(id);
    order.set_precision(o.preflight_precision);
    order.set_budget_ms(o.preflight_budget_ms);
    order.set_timeout_ms(o.preflight_timeout_ms);
    pending_[id] = name;
    orders.push_back(id);
    state_.SendLocked(name, message);
  }
  LogInfo(absl::StrCat("pre-flight ordered on ", absl::StrJoin(nodes, ", ")));
  auto answered = [this, &orders]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu) {
    return std::all_of(orders.begin(), orders.end(),
                       [this](int64_t id) { return done_.count(id) > 0; });
  };
  state_.mu.AwaitWithTimeout(
      absl::Condition(&answered),
      absl::Milliseconds(o.preflight_timeout_ms + kAnswerGraceMs));
  std::vector<v1::PreflightResult> results;
  for (size_t i = 0; i < orders.size(); ++i) {
    auto done = done_.find(orders[i]);
    if (done != done_.end()) {
      results.push_back(std::move(done->second));
      done_.erase(done);
      continue;
    }
    pending_.erase(orders[i]);
    v1::PreflightResult& missing = results.emplace_back();
    missing.set_node(nodes[i]);
    missing.set_time_ms(state_.clock->NowMs());
    missing.set_error(
        absl::StrFormat("no answer within %d s",
                        (o.preflight_timeout_ms + kAnswerGraceMs) / 1000));
  }
  FinishLocked(results);
  return results;
}

void NodeHealth::HandleDoneLocked(const std::string& node,
                                  const v1::PreflightDone& done) {
  auto order = pending_.find(done.id());
  if (order == pending_.end() || order->second != node) {
    LogWarning(absl::StrCat("node ", node, ": pre-flight answer ", done.id(),
                            " to no order of it ignored"));
    return;
  }
  pending_.erase(order);
  v1::PreflightResult result;
  result.set_node(node);
  result.set_time_ms(state_.clock->NowMs());
  result.set_device(done.device());
  *result.mutable_figures() = done.figures();
  result.set_seconds(done.seconds());
  result.set_error(done.error());
  done_[done.id()] = std::move(result);
}

void NodeHealth::FinishLocked(std::vector<v1::PreflightResult>& results) {
  const NodeHealthOptions& o = state_.options.node_health;
  for (v1::PreflightResult& result : results) {
    auto node = state_.nodes.nodes().find(result.node());
    if (node != state_.nodes.nodes().end()) {
      result.set_inventory_class(InventoryClass(node->second.info.inventory()));
    }
  }
  // Each node's recent results, newest first: this batch's, then those
  // stored (at most kClassHistory of each).
  std::map<std::string, std::vector<v1::PreflightResult>> recent;
  if (auto latest = state_.store->LatestPreflights(); latest.ok()) {
    for (const v1::PreflightResult& r : *latest) {
      auto h = state_.store->PreflightHistory(r.node(),
                                              static_cast<int>(kClassHistory));
      if (h.ok()) recent[r.node()] = std::move(*h);
    }
  } else {
    LogError(latest.status().ToString());
  }
  for (const v1::PreflightResult& r : results) {
    if (!r.error().empty()) continue;
    std::vector<v1::PreflightResult>& of_node = recent[r.node()];
    of_node.insert(of_node.begin(), r);
    if (of_node.size() > kClassHistory) of_node.resize(kClassHistory);
  }
  for (v1::PreflightResult& result : results) {
    const std::string& name = result.node();
    std::vector<v1::PreflightResult> history;
    if (auto h = state_.store->PreflightHistory(name, o.history); h.ok()) {
      history = std::move(*h);
    } else {
      LogError(h.status().ToString());
    }
    std::vector<v1::PreflightResult> peers;
    for (const auto& [other, of_node] : recent) {
      if (other == name) continue;
      for (const v1::PreflightResult& r : of_node) {
        if (r.inventory_class() == result.inventory_class()) peers.push_back(r);
      }
    }
    result = JudgePreflight(std::move(result), history, peers, o.rule);
    if (result.flagged()) {
      result.set_drained(o.drain_on_flag);
      v1::NodeIncident incident;
      incident.set_node(name);
      incident.set_time_ms(result.time_ms());
      incident.set_kind(kPreflight);
      incident.set_rank(-1);
      incident.set_detail(result.evidence());
      FlagLocked(name, incident);
    }
    LogInfo(
        absl::StrCat("node ", name, ": pre-flight ",
                     result.error().empty()
                         ? absl::StrFormat("in %.1f s%s", result.seconds(),
                                           result.flagged() ? ", flagged" : "")
                         : absl::StrCat("failed: ", result.error())));
  }
  // Stored after every judgement, so that no result of the batch is
  // another's history.
  for (const v1::PreflightResult& result : results) {
    if (absl::Status saved = state_.store->SavePreflight(result); !saved.ok()) {
      LogError(saved.ToString());
    }
  }
}

void NodeHealth::DecorateLocked(
    google::protobuf::RepeatedPtrField<v1::Node>& views) {
  absl::StatusOr<std::map<std::string, int>> counts =
      state_.store->CountIncidents();
  if (!counts.ok()) LogError(counts.status().ToString());
  absl::StatusOr<std::vector<v1::PreflightResult>> latest =
      state_.store->LatestPreflights();
  if (!latest.ok()) LogError(latest.status().ToString());
  for (v1::Node& view : views) {
    auto node = state_.nodes.nodes().find(view.name());
    if (node != state_.nodes.nodes().end() && !node->second.flag.empty()) {
      view.set_flag(node->second.flag);
      view.set_flagged_ms(node->second.flagged_ms);
    }
    if (counts.ok()) {
      auto count = counts->find(view.name());
      if (count != counts->end()) view.set_incidents(count->second);
    }
    if (!latest.ok()) continue;
    for (const v1::PreflightResult& r : *latest) {
      if (r.node() == view.name()) *view.mutable_last_preflight() = r;
    }
  }
}

}  // namespace hpcai500
