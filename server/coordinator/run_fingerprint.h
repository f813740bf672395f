// The fingerprint a run gets as it ends (methodology/fingerprint.h): its
// last attempt's nodes with the inventory each reported when the attempt
// was placed, their labels as the coordinator knows them now, the spec and
// this coordinator's version.
//
// Thread-safe: a free function; the caller holds what guards `nodes`.
#ifndef HPCAI500_SERVER_COORDINATOR_RUN_FINGERPRINT_H_
#define HPCAI500_SERVER_COORDINATOR_RUN_FINGERPRINT_H_

#include "proto/hpcai500.pb.h"
#include "server/coordinator/node_table.h"

namespace hpcai500 {

// The fingerprint of `run` (borrowed for the call): no node fields when it
// never had an attempt; a node the table no longer knows has no labels.
v1::Fingerprint RunFingerprint(const v1::Run& run, const NodeTable& nodes);

}  // namespace hpcai500

#endif  // HPCAI500_SERVER_COORDINATOR_RUN_FINGERPRINT_H_
