#include "server/coordinator/node_table.h"

#include <utility>

#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"

namespace hpcai500 {

bool NodeTable::AddIfUnknown(const std::string& name, int64_t now_ms) {
  Node& node = nodes_[name];
  if (!node.info.name().empty()) return false;
  node.info.set_name(name);
  node.info.set_last_seen_ms(now_ms);
  return true;
}

void NodeTable::Restore(v1::Node info, int64_t now_ms) {
  const std::string name = info.name();
  Node& node = nodes_[name];
  // A node stored down was saved when it went down, so its last_seen_ms is
  // its agent's last word; a node stored up was saved when it registered
  // and spoke since: its silence counts from the restore.
  node.heard_before_restart_ms =
      info.state() == "down" ? info.last_seen_ms() : 0;
  info.set_last_seen_ms(now_ms);
  info.set_connected(false);
  node.draining = info.state() == "draining" || info.state() == "drained";
  if (node.draining) node.drain_reason = info.state_reason();
  absl::string_view reason = info.state_reason();
  node.leaving =
      info.state() == "down" && absl::ConsumePrefix(&reason, kLeftReasonPrefix);
  if (node.leaving) node.leave_reason = std::string(reason);
  node.info = std::move(info);
}

bool NodeTable::Remove(const std::string& name) {
  auto it = nodes_.find(name);
  if (it == nodes_.end() || it->second.session != 0) return false;
  nodes_.erase(it);
  return true;
}

NodeTable::Node& NodeTable::Connect(const v1::Register& request,
                                    AgentChannel* channel, int64_t now_ms,
                                    bool* replaced) {
  Node& node = nodes_[request.name()];
  *replaced = node.session != 0;
  if (*replaced) sessions_.erase(node.session);
  const int64_t session = next_session_++;
  sessions_[session] = request.name();
  node.session = session;
  node.channel = channel;
  v1::Node& info = node.info;
  info.set_name(request.name());
  info.set_address(request.address().empty() ? request.hostname()
                                             : request.address());
  info.set_slots(request.slots());
  info.set_cpus(request.cpus());
  info.set_gpus(request.gpus());
  *info.mutable_labels() = request.labels();
  *info.mutable_inventory() = request.inventory();
  info.set_last_seen_ms(now_ms);
  node.shared_checkpoints = request.shared_checkpoints();
  node.workdir = request.workdir();
  node.checkpoint_root = request.checkpoint_root();
  node.iface = request.iface();
  node.leaving = false;
  node.leave_reason.clear();
  node.heard_before_restart_ms = 0;
  return node;
}

NodeTable::Node* NodeTable::FindSession(int64_t session) {
  auto it = sessions_.find(session);
  if (it == sessions_.end()) return nullptr;
  return &nodes_[it->second];
}

NodeTable::Node* NodeTable::Disconnect(int64_t session) {
  auto it = sessions_.find(session);
  if (it == sessions_.end()) return nullptr;
  Node& node = nodes_[it->second];
  sessions_.erase(it);
  if (node.session != session) return nullptr;
  node.session = 0;
  node.channel = nullptr;
  return &node;
}

bool NodeTable::Send(const std::string& name,
                     const v1::CoordinatorMessage& message) {
  auto it = nodes_.find(name);
  if (it == nodes_.end() || it->second.channel == nullptr) return false;
  it->second.channel->Send(message);
  return true;
}

int NodeTable::connected() const {
  int count = 0;
  for (const auto& [name, node] : nodes_) count += node.session != 0;
  return count;
}

}  // namespace hpcai500
