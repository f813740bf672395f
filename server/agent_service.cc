// AgentService: one agent's stream on gRPC's callback API (AgentStream),
// handing its messages to the Coordinator and writing the coordinator's.
#include "server/agent_service.h"

#include <deque>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "server/auth/tls.h"
#include "server/grpc_calls.h"

namespace hpcai500 {
namespace {

// One agent's stream on the callback API; it deletes itself in OnDone().
//
// Reads: one at a time, each handed to the coordinator before the next is
// asked for, so an agent's messages are handled in the order it sent them.
// The first must be a Register. Only gRPC calls the read path (OnReadDone),
// never two at once, so it needs no lock.
//
// Writes: Send() (the coordinator's AgentChannel, called with its mutex
// held) queues the message and starts a write when none is in flight,
// unless the read path is in the coordinator: it then starts the write
// itself once the coordinator's mutex is free, so the send to the socket
// happens outside that lock. OnWriteDone starts the next. Neither blocks or
// calls back into the coordinator. The stream ends on the read path only: when
// the agent leaves, the call is cancelled (keepalive, shutdown, a failed write)
// or the session was replaced. Then it leaves the coordinator, which sends
// nothing after Disconnect() returns, and finishes once the write in
// flight, if any, is done; messages still queued are dropped, as the agent
// is gone.
class AgentStream final
    : public grpc::ServerBidiReactor<v1::AgentMessage, v1::CoordinatorMessage>,
      public AgentChannel {
 public:
  // Authenticates and authorizes the caller and counts the stream, or
  // finishes at once with the refusal. The arguments are borrowed for the
  // stream's life.
  AgentStream(grpc::CallbackServerContext* context, Coordinator* coordinator,
              AccessControl* access, bool check_certificates, LiveStreams* live)
      : context_(context),
        coordinator_(coordinator),
        access_(access),
        check_certificates_(check_certificates),
        live_(live) {
    live_->Add();
    grpc::Status allowed = Admit();
    if (!allowed.ok()) {
      Finish(allowed);
      return;
    }
    StartRead(&incoming_);
  }

  void Send(const v1::CoordinatorMessage& message) override {
    {
      absl::MutexLock lock(&mu_);
      if (ended_) return;
      outgoing_.push_back(message);
      // The read path starts the write once the coordinator let go of its
      // mutex (most messages answer the agent's own: heartbeats, acks).
      if (handling_) return;
    }
    StartWriteIfIdle();
  }

  void OnReadDone(bool ok) override {
    if (!ok) {  // the agent left, or the call was cancelled
      End(grpc::Status::OK);
      return;
    }
    if (!session_.has_value()) {
      SetHandling(true);
      grpc::Status registered = Register();
      SetHandling(false);
      StartWriteIfIdle();
      if (!registered.ok()) {
        End(registered);
        return;
      }
    } else {
      SetHandling(true);
      absl::Status handled =
          coordinator_->HandleAgentMessage(*session_, incoming_);
      SetHandling(false);
      StartWriteIfIdle();
      if (absl::IsFailedPrecondition(handled)) {  // replaced
        End(grpc::Status::OK);
        return;
      }
      if (!handled.ok()) {
        LogWarning(absl::StrCat("node ", node_, ": ", handled.message()));
      }
    }
    StartRead(&incoming_);
  }

  void OnWriteDone(bool ok) override {
    // While writing_ is set End() cannot finish, so `this` stays; the
    // pending read fails and ends the stream.
    if (!ok) context_->TryCancel();
    const v1::CoordinatorMessage* next = nullptr;
    std::optional<grpc::Status> finish;
    {
      absl::MutexLock lock(&mu_);
      outgoing_.pop_front();
      if (!ok) {  // the agent is gone: write nothing more
        ended_ = true;
        outgoing_.clear();
      }
      if (!ended_ && !outgoing_.empty()) {
        next = &outgoing_.front();
      } else {
        writing_ = false;
        finish = std::exchange(finish_, std::nullopt);
      }
    }
    if (next != nullptr) {
      StartWrite(next);
    } else if (finish.has_value()) {
      Finish(*finish);  // `this` may be gone after this call
    }
  }

  void OnDone() override {
    if (counted_) access_->CloseAgentStream();
    LiveStreams* live = live_;
    delete this;
    live->Remove();  // last: what the stream borrowed may go now
  }

 private:
  // The caller's token, its right to register a node and the stream cap;
  // counts the stream when all pass.
  grpc::Status Admit() {
    absl::StatusOr<Principal> who =
        AuthenticateCall(*access_, context_->client_metadata(),
                         AgentConnectMethod(), context_->peer());
    if (!who.ok()) return ToGrpcStatus(who.status());
    who_ = *std::move(who);
    grpc::Status allowed = ToGrpcStatus(access_->Require(
        who_, Action::kRegisterNode, "register a node", context_->peer()));
    if (!allowed.ok()) return allowed;
    grpc::Status open = ToGrpcStatus(access_->OpenAgentStream());
    counted_ = open.ok();
    return open;
  }

  // The first message: a Register for the node the caller may act as (its
  // token's node, and its certificate's with --tls-client-ca). Refusals
  // are audited, as is the registration.
  grpc::Status Register() {
    if (!incoming_.has_register_()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "the first message of an agent stream must be a "
                          "Register");
    }
    node_ = incoming_.register_().name();
    const std::string target = absl::StrCat("node ", node_.substr(0, 64));
    const std::string peer = context_->peer();
    if (!who_.node.empty() && who_.node != node_) {
      const std::string why = absl::StrCat(
          "the token of ", who_.user, " is bound to node ", who_.node,
          "; it cannot register as ", node_.substr(0, 64));
      LogWarning(absl::StrCat("refusing an agent from ", peer, ": ", why));
      access_->Audit(&who_, "register", target, peer, /*allowed=*/false, why);
      return grpc::Status(grpc::StatusCode::PERMISSION_DENIED, why);
    }
    if (check_certificates_) {
      absl::Status vouched =
          CheckAgentCertificate(*context_->auth_context(), node_);
      if (!vouched.ok()) {
        LogWarning(absl::StrCat("refusing an agent from ", peer, ": ",
                                vouched.message()));
        access_->Audit(&who_, "register", target, peer, /*allowed=*/false,
                       vouched.message());
        return ToGrpcStatus(vouched);
      }
    }
    absl::StatusOr<int64_t> session =
        coordinator_->Connect(incoming_.register_(), this);
    access_->Audit(&who_, "register", target, peer, session.ok(),
                   session.ok() ? "" : session.status().message());
    if (!session.ok()) {
      LogWarning(absl::StrCat("refusing an agent from ", peer, ": ",
                              session.status().message()));
      return ToGrpcStatus(session.status());
    }
    session_ = *session;
    return grpc::Status::OK;
  }

  void SetHandling(bool handling) {
    absl::MutexLock lock(&mu_);
    handling_ = handling;
  }

  // Starts writing the oldest queued message unless a write is in flight
  // (OnWriteDone goes on from there) or the stream ended.
  void StartWriteIfIdle() {
    const v1::CoordinatorMessage* next = nullptr;
    {
      absl::MutexLock lock(&mu_);
      if (ended_ || writing_ || outgoing_.empty()) return;
      writing_ = true;
      next = &outgoing_.front();  // deque: stays put while others are added
    }
    StartWrite(next);
  }

  // Leaves the coordinator and finishes with `status` once no write is in
  // flight (else OnWriteDone finishes).
  void End(grpc::Status status) {
    if (session_.has_value()) coordinator_->Disconnect(*session_);
    {
      absl::MutexLock lock(&mu_);
      ended_ = true;
      if (writing_) {
        finish_ = std::move(status);
        return;
      }
    }
    Finish(status);  // `this` may be gone after this call
  }

  // Constant after construction.
  grpc::CallbackServerContext* const context_;
  Coordinator* const coordinator_;
  AccessControl* const access_;
  const bool check_certificates_;
  LiveStreams* const live_;  // the service's count of live streams

  // The read path's: set before the first read, or by it.
  Principal who_;
  bool counted_ = false;  // by AccessControl::OpenAgentStream
  std::string node_;
  std::optional<int64_t> session_;  // once registered
  v1::AgentMessage incoming_;

  absl::Mutex mu_;
  // Front: the message being written while writing_.
  std::deque<v1::CoordinatorMessage> outgoing_ ABSL_GUARDED_BY(mu_);
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  // The read path is in the coordinator: Send() leaves the write to it.
  bool handling_ ABSL_GUARDED_BY(mu_) = false;
  bool ended_ ABSL_GUARDED_BY(mu_) = false;  // no more writes
  // The status End() left for OnWriteDone to finish with.
  std::optional<grpc::Status> finish_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

grpc::ServerBidiReactor<v1::AgentMessage, v1::CoordinatorMessage>*
AgentServiceImpl::Connect(grpc::CallbackServerContext* context) {
  return new AgentStream(context, coordinator_, access_,
                         check_agent_certificates_, &live_);
}

AgentServiceImpl::~AgentServiceImpl() { WaitForStreams(); }

void AgentServiceImpl::WaitForStreams() { live_.WaitForNone(); }

void LiveStreams::Add() {
  absl::MutexLock lock(&mu_);
  ++count_;
}

void LiveStreams::Remove() {
  absl::MutexLock lock(&mu_);
  --count_;
}

void LiveStreams::WaitForNone() {
  absl::MutexLock lock(&mu_);
  auto none = [this]()
                  ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return count_ == 0; };
  mu_.Await(absl::Condition(&none));
}

}  // namespace hpcai500
