// The refused ranks, kept and sent again until acknowledged.
#include "agent/supervisor/refusals.h"

#include <algorithm>
#include <string>

namespace hpcai500::agent {

v1::AgentMessage ExitedMessage(const v1::WorkerExited& exited) {
  v1::AgentMessage message;
  *message.mutable_worker_exited() = exited;
  return message;
}

v1::AgentMessage Refusals::Refuse(const v1::AttemptKey& key, int rank,
                                  absl::string_view error) {
  v1::WorkerExited& exited = refused_[{key.run_id(), key.attempt(), rank}];
  exited.Clear();
  *exited.mutable_key() = key;
  exited.set_rank(rank);
  exited.set_exit_code(-1);
  exited.set_error(std::string(error));
  return ExitedMessage(exited);
}

std::vector<v1::AgentMessage> Refusals::RefuseAll(const v1::Assignment& a,
                                                  absl::string_view error) {
  std::vector<v1::AgentMessage> replies;
  if (a.ranks().empty()) replies.push_back(Refuse(a.key(), 0, error));
  for (int rank : a.ranks()) replies.push_back(Refuse(a.key(), rank, error));
  return replies;
}

void Refusals::Acknowledge(const v1::ExitAck& ack) {
  refused_.erase({ack.key().run_id(), ack.key().attempt(), ack.rank()});
}

void Refusals::AppendTo(std::vector<v1::AgentMessage>& messages) const {
  for (const auto& [id, exited] : refused_) {
    messages.push_back(ExitedMessage(exited));
  }
}

void Refusals::AddExitedRanks(std::vector<v1::RunningAttempt>& running) const {
  for (const auto& [id, exited] : refused_) {
    auto same = std::find_if(
        running.begin(), running.end(), [&](const v1::RunningAttempt& r) {
          return r.key().run_id() == exited.key().run_id() &&
                 r.key().attempt() == exited.key().attempt();
        });
    if (same == running.end()) {
      same = running.emplace(running.end());
      *same->mutable_key() = exited.key();
    }
    same->add_exited_ranks(exited.rank());
  }
}

}  // namespace hpcai500::agent
