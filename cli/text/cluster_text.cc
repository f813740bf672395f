// What the CLI prints about nodes, queues, maintenance and the audit trail
// (cli/text/cluster_text.h).
#include "cli/text/cluster_text.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/text/format.h"
#include "common/printable.h"

namespace hpcai500 {
namespace {

// A node's state (idle, busy, draining, drained, down) where the
// coordinator says, else whether its agent is connected.
std::string NodeStateText(const v1::Node& node) {
  if (!node.state().empty()) return node.state();
  return node.connected() ? "connected" : "gone";
}

// "k=v" pairs sorted so the output is stable (the map is unordered),
// joined by commas; `none` when there are none.
std::string LabelsText(
    const google::protobuf::Map<std::string, std::string>& map,
    const char* none) {
  std::vector<std::string> labels;
  for (const auto& [key, value] : map) {
    labels.push_back(absl::StrCat(key, "=", value));
  }
  std::sort(labels.begin(), labels.end());
  return labels.empty() ? none : absl::StrJoin(labels, ",");
}

}  // namespace

std::string FormatNodes(const v1::ListNodesResponse& nodes,
                        absl::TimeZone zone) {
  const bool any_reason = std::any_of(
      nodes.nodes().begin(), nodes.nodes().end(),
      [](const v1::Node& node) { return !node.state_reason().empty(); });
  std::vector<std::vector<std::string>> rows;
  for (const v1::Node& node : nodes.nodes()) {
    const std::string& driver = node.inventory().driver_version();
    std::vector<std::string> row = {
        node.name(),
        node.address(),
        absl::StrCat(node.used_slots(), "/", node.slots()),
        absl::StrCat(node.cpus()),
        absl::StrCat(node.gpus()),
        NodeStateText(node),
        FormatDevices(node.inventory()),
        driver.empty() ? "-" : driver,
        FormatTimeMs(node.last_seen_ms(), zone),
        LabelsText(node.labels(), "-")};
    if (any_reason) {
      row.push_back(node.state_reason().empty() ? "-" : node.state_reason());
    }
    rows.push_back(std::move(row));
  }
  std::vector<std::string> header = {
      "name",  "address", "slots",  "cpus",      "gpus",
      "state", "devices", "driver", "last seen", "labels"};
  if (any_reason) header.push_back("reason");
  std::string text = FormatTable(header, rows, /*right_aligned=*/{2, 3, 4});
  // Node health: each flagged node with the evidence that flagged it.
  for (const v1::Node& node : nodes.nodes()) {
    if (node.flag().empty()) continue;
    absl::StrAppend(&text, "flagged ", EscapeLine(node.name()), " (",
                    node.incidents(), " incident(s)) since ",
                    FormatTimeMs(node.flagged_ms(), zone), ": ",
                    EscapeLine(node.flag()), "\n");
  }
  if (nodes.maintenance().until_ms() > 0) {
    absl::StrAppend(&text, FormatMaintenance(nodes.maintenance(), zone));
  }
  return text;
}

std::string FormatMaintenance(const v1::MaintenanceWindow& window,
                              absl::TimeZone zone) {
  if (window.until_ms() == 0) return "no maintenance window\n";
  return absl::StrCat(
      "maintenance window: on until ", FormatTimeMs(window.until_ms(), zone),
      ", started by ",
      window.started_by().empty() ? "-" : EscapeLine(window.started_by()),
      window.reason().empty() ? ""
                              : absl::StrCat(": ", EscapeLine(window.reason())),
      "\n  (agents keep their workers while hpcai500d is away, and no node "
      "is lost for silence, until its end plus the node timeout)\n");
}

std::string FormatQueues(const v1::ListQueuesResponse& queues) {
  std::vector<std::vector<std::string>> rows;
  for (const v1::Queue& queue : queues.queues()) {
    rows.push_back(
        {absl::StrCat(queue.name(), queue.is_default() ? "*" : ""),
         absl::StrCat(queue.idle_nodes(), "/", queue.nodes()),
         absl::StrCat(queue.queued_runs()), absl::StrCat(queue.running_runs()),
         absl::StrCat(queue.priority(), "/", queue.max_priority()),
         queue.max_time_limit_s() > 0
             ? absl::FormatDuration(absl::Seconds(queue.max_time_limit_s()))
             : "-",
         LabelsText(queue.node_labels(), "(every node)")});
  }
  return FormatTable({"queue", "idle/nodes", "queued", "running",
                      "priority/max", "max time", "nodes labelled"},
                     rows, /*right_aligned=*/{1, 2, 3, 4});
}

std::string FormatDrained(const v1::Node& node) {
  return absl::StrCat("node ", EscapeLine(node.name()), ": ", node.state(),
                      " (", EscapeLine(node.state_reason()), ")\n");
}

std::string FormatResumed(const v1::Node& node) {
  return absl::StrCat("node ", EscapeLine(node.name()), ": ", node.state(),
                      "\n");
}

std::string FormatAudit(const v1::ListAuditResponse& audit,
                        absl::TimeZone zone) {
  std::vector<std::vector<std::string>> rows;
  for (const v1::AuditEntry& e : audit.entries()) {
    rows.push_back({FormatTimeMs(e.time_ms(), zone),
                    e.user().empty() ? "-" : e.user(),
                    e.role().empty() ? "-" : e.role(), e.action(), e.target(),
                    e.peer(), e.allowed() ? "allowed" : "refused",
                    e.detail().empty() ? "-" : e.detail()});
  }
  return FormatTable(
      {"time", "user", "role", "action", "target", "from", "verdict", "detail"},
      rows, /*right_aligned=*/{});
}

}  // namespace hpcai500
