// What the CLI prints about the cluster, from the coordinator's answers:
// the nodes and queues tables, the line a drain or resume answers with, the
// maintenance window, and the audit table. Pure: the RPCs are in
// cli/commands/commands.h.
//
// Thread-safe: free functions.
#ifndef HPCAI500_CLI_TEXT_CLUSTER_TEXT_H_
#define HPCAI500_CLI_TEXT_CLUSTER_TEXT_H_

#include <string>

#include "absl/time/time.h"
#include "proto/hpcai500.pb.h"

namespace hpcai500 {

// One row per node: name, address, used/total slots, cpus, gpus, state
// (else connected or gone), devices, driver, last seen (in `zone`) and
// sorted labels, and a reason column when any node has a state reason;
// then the maintenance window's line when one is on.
std::string FormatNodes(const v1::ListNodesResponse& nodes,
                        absl::TimeZone zone);

// One row per queue ("*" marks the default): idle/nodes, queued, running,
// priority/max, max time and the labels that pick its nodes.
std::string FormatQueues(const v1::ListQueuesResponse& queues);

// "node N: draining (REASON)" after a drain; "node N: idle" after a resume.
std::string FormatDrained(const v1::Node& node);
std::string FormatResumed(const v1::Node& node);

// "maintenance window: on until TIME (in `zone`), started by USER: REASON"
// (and what it means), or "no maintenance window" for until_ms 0.
std::string FormatMaintenance(const v1::MaintenanceWindow& window,
                              absl::TimeZone zone);

// One row per audited call: time (in `zone`), user, role, action, target,
// peer, allowed or refused, detail.
std::string FormatAudit(const v1::ListAuditResponse& audit,
                        absl::TimeZone zone);

}  // namespace hpcai500

#endif  // HPCAI500_CLI_TEXT_CLUSTER_TEXT_H_
