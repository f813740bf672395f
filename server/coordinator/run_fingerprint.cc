// The fingerprint a run gets as it ends: see run_fingerprint.h.
#include "server/coordinator/run_fingerprint.h"

#include <vector>

#include "common/version.h"
#include "methodology/fingerprint.h"

namespace hpcai500 {

v1::Fingerprint RunFingerprint(const v1::Run& run, const NodeTable& nodes) {
  std::vector<FingerprintNode> fingerprint_nodes;
  if (!run.attempts().empty()) {
    const v1::Attempt& last = *run.attempts().rbegin();
    for (const std::string& name : last.nodes()) {
      FingerprintNode& node = fingerprint_nodes.emplace_back();
      node.name = name;
      if (auto it = last.inventory().find(name); it != last.inventory().end()) {
        node.inventory = it->second;
      }
      if (auto it = nodes.nodes().find(name); it != nodes.nodes().end()) {
        node.labels = {it->second.info.labels().begin(),
                       it->second.info.labels().end()};
      }
    }
  }
  return MakeFingerprint(run.spec(), fingerprint_nodes,
                         ProgramVersion("hpcai500d"));
}

}  // namespace hpcai500
