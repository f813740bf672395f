// What the operator sets of node health (hpcai500d's --outlier-z,
// --outlier-min-change, --drain-on-flag, --preflight-budget-ms,
// --preflight-timeout-s): the outlier rule (methodology/outliers.h), whether
// a flag drains the node, and the bounds of one pre-flight.
//
// Thread-safe: a value type.
#ifndef HPCAI500_SERVER_COORDINATOR_NODE_HEALTH_OPTIONS_H_
#define HPCAI500_SERVER_COORDINATOR_NODE_HEALTH_OPTIONS_H_

#include <cstdint>

#include "methodology/outliers.h"

namespace hpcai500 {

struct NodeHealthOptions {
  OutlierRule rule;
  // A flagged node (by pre-flight or as a straggler) is also drained, with
  // the evidence as the reason.
  bool drain_on_flag = false;
  // A straggler flags its node (it is always recorded as an incident).
  bool flag_stragglers = true;
  // The worker's measuring budget, and how long the agent lets it run
  // (LibTorch's start and a busy node on top): under 30 s a node.
  int64_t preflight_budget_ms = 4'000;
  int64_t preflight_timeout_ms = 20'000;
  // The precision the GEMM is measured at.
  const char* preflight_precision = "fp32";
  // How many earlier pre-flights of a node its own history holds.
  int history = 20;
};

}  // namespace hpcai500

#endif  // HPCAI500_SERVER_COORDINATOR_NODE_HEALTH_OPTIONS_H_
