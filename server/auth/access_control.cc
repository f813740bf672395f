#include "server/auth/access_control.h"

#include <openssl/crypto.h>

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "common/status_macros.h"

namespace hpcai500 {

AccessControl::AccessControl(Store* store, Clock* clock,
                             std::optional<TokenAuthenticator> tokens,
                             std::string shared_token, AccessLimits limits)
    : store_(store),
      clock_(clock),
      tokens_(std::move(tokens)),
      shared_token_(std::move(shared_token)),
      limits_(limits) {}

bool AccessControl::enabled() {
  absl::MutexLock lock(&mu_);
  if (enabled_) return true;
  if (!shared_token_.empty()) {
    enabled_ = true;
  } else if (tokens_.has_value()) {
    absl::StatusOr<int64_t> count = store_->CountActiveTokens();
    enabled_ = !count.ok() || *count > 0;  // unsure: stay safe
  }
  return enabled_;
}

absl::StatusOr<Principal> AccessControl::Authenticate(
    absl::string_view credential) {
  if (!enabled()) return LocalPrincipal();
  if (credential.empty()) {
    return absl::UnauthenticatedError(
        "no token: send 'authorization: Bearer <token>' (--token, "
        "--token-file or $HPCAI500_TOKEN)");
  }
  std::optional<Principal> who;
  if (!shared_token_.empty() && credential.size() == shared_token_.size() &&
      CRYPTO_memcmp(credential.data(), shared_token_.data(),
                    credential.size()) == 0) {
    who = Principal{"shared-token", Role::kAdmin, "", /*any_node=*/true};
  } else if (tokens_.has_value()) {
    absl::StatusOr<Principal> checked = tokens_->Authenticate(credential);
    if (!checked.ok()) return checked.status();
    who = *std::move(checked);
  } else {
    return absl::UnauthenticatedError("unknown, revoked or malformed token");
  }
  if (!TakeRequest(who->user)) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "user ", who->user, " is over ", limits_.requests_per_second,
        " requests per second; retry later"));
  }
  return *who;
}

bool AccessControl::TakeRequest(const std::string& user) {
  absl::MutexLock lock(&mu_);
  const int64_t now = clock_->NowMs();
  Bucket& bucket = buckets_[user];
  if (bucket.refilled_ms == 0) {
    bucket.tokens = limits_.burst;
  } else {
    bucket.tokens = std::min(
        limits_.burst, bucket.tokens + (now - bucket.refilled_ms) / 1000.0 *
                                           limits_.requests_per_second);
  }
  bucket.refilled_ms = now;
  if (bucket.tokens < 1) return false;
  bucket.tokens -= 1;
  return true;
}

void AccessControl::Audit(const Principal* who, absl::string_view action,
                          absl::string_view target, absl::string_view peer,
                          bool allowed, absl::string_view detail) {
  v1::AuditEntry entry;
  entry.set_time_ms(clock_->NowMs());
  if (who != nullptr) {
    entry.set_user(who->user);
    entry.set_role(std::string(RoleName(who->role)));
  }
  entry.set_action(std::string(action));
  entry.set_target(std::string(target));
  entry.set_peer(std::string(peer));
  entry.set_allowed(allowed);
  entry.set_detail(std::string(detail.substr(0, 1024)));
  if (absl::Status saved = store_->AppendAudit(entry); !saved.ok()) {
    LogError(absl::StrCat("audit: ", saved.message()));
  }
}

absl::StatusOr<std::vector<v1::AuditEntry>> AccessControl::ListAudit(
    int limit, int64_t before_id) {
  return store_->ListAudit(std::clamp(limit, 0, 10'000), before_id);
}

absl::Status AccessControl::AuthorizeRead(absl::string_view bearer) {
  ASSIGN_OR_RETURN(const Principal who, Authenticate(bearer));
  if (Allows(who.role, Action::kRead)) return absl::OkStatus();
  return absl::PermissionDeniedError(
      absl::StrCat("role ", RoleName(who.role), " may not read"));
}

absl::Status AccessControl::Require(const Principal& who, Action action,
                                    absl::string_view target,
                                    absl::string_view peer) {
  if (Allows(who.role, action) ||
      (action == Action::kRegisterNode && who.any_node)) {
    return absl::OkStatus();
  }
  const std::string why =
      action == Action::kRegisterNode
          ? absl::StrCat("role ", RoleName(who.role),
                         " may not register a node: an agent needs an agent "
                         "token bound to its node (hpcai500d token create "
                         "--role agent --node NAME)")
          : absl::StrCat("role ", RoleName(who.role), " may not do this");
  Audit(&who, "refused", target, peer, /*allowed=*/false, why);
  return absl::PermissionDeniedError(absl::StrCat(
      who.user, " (", RoleName(who.role), "): ", target, ": ", why));
}

absl::Status AccessControl::OpenAgentStream() {
  absl::MutexLock lock(&mu_);
  if (agent_streams_ >= limits_.max_agent_streams) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "at most ", limits_.max_agent_streams, " agent streams are open"));
  }
  ++agent_streams_;
  return absl::OkStatus();
}

void AccessControl::CloseAgentStream() {
  absl::MutexLock lock(&mu_);
  --agent_streams_;
}

absl::Status AccessControl::OpenWatchStream() {
  absl::MutexLock lock(&mu_);
  if (watch_streams_ >= limits_.max_watch_streams) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "at most ", limits_.max_watch_streams, " watch streams are open"));
  }
  ++watch_streams_;
  return absl::OkStatus();
}

void AccessControl::CloseWatchStream() {
  absl::MutexLock lock(&mu_);
  --watch_streams_;
}

}  // namespace hpcai500
