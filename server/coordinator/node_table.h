// NodeTable: the nodes the coordinator knows (each one's last registration
// and when it was last heard from) and the live agent streams (sessions) to
// them. It only records; the Coordinator decides what a registration, a
// silence or a disconnection means for the runs.
//
// Not thread-safe: the Coordinator's mutex guards it.
#ifndef HPCAI500_SERVER_COORDINATOR_NODE_TABLE_H_
#define HPCAI500_SERVER_COORDINATOR_NODE_TABLE_H_

#include <cstdint>
#include <map>
#include <string>

#include "proto/hpcai500.pb.h"

namespace hpcai500 {

// The outbound half of one agent's stream. The coordinator calls Send() with
// its mutex held: an implementation queues the message and returns.
class AgentChannel {
 public:
  virtual ~AgentChannel() = default;
  virtual void Send(const v1::CoordinatorMessage& message) = 0;
};

class NodeTable {
 public:
  struct Node {
    v1::Node info;
    int64_t session = 0;              // 0: disconnected
    AgentChannel* channel = nullptr;  // borrowed; null when disconnected
    // Its checkpoint root is shared with the other nodes that say so (as of
    // its last registration).
    bool shared_checkpoints = false;
    // Its agent's --workdir and --checkpoint-root (as of its last
    // registration): rank 0's agent of a launcher run names them in this
    // node's ranks' command lines.
    std::string workdir;
    std::string checkpoint_root;
    std::string iface;  // its --iface
    // Drained by an admin (`hpcai500 drain`), with the reason; kept in the
    // store.
    bool draining = false;
    std::string drain_reason;
    // Flagged by node health (server/coordinator/node_health.h) with the
    // evidence, and when; kept in the store. "" when not flagged.
    std::string flag;
    int64_t flagged_ms = 0;
    // Its agent said it is leaving for good (v1::Leaving), with the reason;
    // cleared when the node registers again. Kept in the store as the
    // state "down" with a reason of kLeftReasonPrefix + leave_reason.
    bool leaving = false;
    std::string leave_reason;
    // A node restored from the store: when its agent was last heard from
    // before the coordinator restarted (info's last_seen_ms restarts at the
    // restore, so that the node timeout counts from there); 0 once it
    // registers again.
    int64_t heard_before_restart_ms = 0;

    // When its agent was last heard from, across restarts: what the node
    // retention counts from.
    int64_t LastHeardMs() const {
      return heard_before_restart_ms > 0 ? heard_before_restart_ms
                                         : info.last_seen_ms();
    }
  };

  // The stored state_reason of a node that left: "left: <its reason>".
  static constexpr char kLeftReasonPrefix[] = "left: ";

  // Adds node `name`, disconnected, with no slots and last seen at
  // `now_ms`, unless it is known. Returns whether it was added.
  bool AddIfUnknown(const std::string& name, int64_t now_ms);

  // Adds a node read back from the store, disconnected, its silence counted
  // from `now_ms` (not from before a restart), draining or leaving when it
  // was; the stored last_seen_ms of a node stored down becomes its
  // heard_before_restart_ms.
  void Restore(v1::Node info, int64_t now_ms);

  // Forgets node `name` unless it has a live session; returns whether it
  // was removed. References to other nodes stay valid.
  bool Remove(const std::string& name);

  // Opens a session for an accepted Register: records the node's address
  // (the hostname when no address), slots, cpus, gpus, labels, inventory
  // whether its checkpoints are shared, its workdir, checkpoint root and
  // iface, and `channel`, borrowed until Disconnect(session); clears
  // `leaving`. A session the node had is replaced; `*replaced` (not null)
  // says whether there was one. Returns the node; its `session` is the new
  // session id.
  Node& Connect(const v1::Register& request, AgentChannel* channel,
                int64_t now_ms, bool* replaced);

  // The node of live session `session`; null when unknown or replaced.
  Node* FindSession(int64_t session);

  // Ends `session`. Returns its node when that was the node's live session
  // (now disconnected), else null.
  Node* Disconnect(int64_t session);

  // Hands `message` to the channel of `name`; false when it is not
  // connected.
  bool Send(const std::string& name, const v1::CoordinatorMessage& message);

  // The number of nodes with a live session.
  int connected() const;

  // Every node by name. References stay valid until the node is removed.
  std::map<std::string, Node>& nodes() { return nodes_; }
  const std::map<std::string, Node>& nodes() const { return nodes_; }

 private:
  std::map<std::string, Node> nodes_;
  std::map<int64_t, std::string> sessions_;  // live session -> node
  int64_t next_session_ = 1;
};

}  // namespace hpcai500

#endif  // HPCAI500_SERVER_COORDINATOR_NODE_TABLE_H_
