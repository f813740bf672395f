// AccessControl: the one place that decides who a caller is and whether it
// may act, for the gRPC services and the HTTP front end alike, and that
// writes the audit trail.
//
// Auth is on when a shared token is configured (hpcai500d --token-file: full
// trust, for a private deployment such as one Slurm job) or any API token
// exists in the store (hpcai500d token create); once on it stays on. While
// it is off every caller is LocalPrincipal(), and hpcai500d listens on
// loopback only unless --insecure or TLS (server/main.cc).
//
// Bounds: a token bucket per user (requests per second, with a burst) and
// counters of open agent and watch streams; beyond them a call is refused
// RESOURCE_EXHAUSTED.
//
// Thread-safe.
#ifndef HPCAI500_SERVER_AUTH_ACCESS_CONTROL_H_
#define HPCAI500_SERVER_AUTH_ACCESS_CONTROL_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "server/auth/auth.h"
#include "server/store/store.h"

namespace hpcai500 {

struct AccessLimits {
  double requests_per_second = 50;  // per user
  double burst = 200;
  // About one per node; hpcai500d --max-agent-streams. Sized for the
  // largest machines (Frontier has 9,408 nodes).
  int max_agent_streams = 10'000;
  int max_watch_streams = 512;
  int max_queued_runs_per_user = 1000;
};

class AccessControl {
 public:
  // `store` and `clock` are borrowed and must outlive this. `tokens` checks
  // API tokens (nullopt: none are accepted); `shared_token` ("" for none) is
  // accepted as user "shared-token" with the admin role.
  AccessControl(Store* store, Clock* clock,
                std::optional<TokenAuthenticator> tokens,
                std::string shared_token, AccessLimits limits = {});

  // Whether callers must show a token.
  bool enabled();

  // The caller showing `credential` (a bearer token, "" for none): the
  // local principal while auth is off; Unauthenticated for no or a bad
  // token; ResourceExhausted when the user is over its request rate.
  absl::StatusOr<Principal> Authenticate(absl::string_view credential);

  // Whether a reader showing `bearer` (as Authenticate) may read: the rule
  // of the pages and the JSON API (CoordinatorView::AuthorizeRead), the
  // same Allows(role, Action::kRead) as every gRPC read. Not audited.
  absl::Status AuthorizeRead(absl::string_view bearer);

  // One audit row: `who` (null: no token was shown) did `action` on
  // `target` from `peer`, allowed or not, with `detail`. Errors are logged.
  void Audit(const Principal* who, absl::string_view action,
             absl::string_view target, absl::string_view peer, bool allowed,
             absl::string_view detail);

  // The audit trail, newest first (Store::ListAudit).
  absl::StatusOr<std::vector<v1::AuditEntry>> ListAudit(int limit,
                                                        int64_t before_id);

  // PermissionDenied (audited) unless `who` may do `action`.
  absl::Status Require(const Principal& who, Action action,
                       absl::string_view target, absl::string_view peer);

  // Counts an open stream; ResourceExhausted when the cap is reached. Every
  // successful Open*Stream needs one Close*Stream.
  absl::Status OpenAgentStream();
  void CloseAgentStream();
  absl::Status OpenWatchStream();
  void CloseWatchStream();

  const AccessLimits& limits() const { return limits_; }

 private:
  struct Bucket {
    double tokens = 0;
    int64_t refilled_ms = 0;
  };
  bool TakeRequest(const std::string& user) ABSL_LOCKS_EXCLUDED(mu_);

  Store* const store_;
  Clock* const clock_;
  const std::optional<TokenAuthenticator> tokens_;
  const std::string shared_token_;
  const AccessLimits limits_;

  absl::Mutex mu_;
  bool enabled_ ABSL_GUARDED_BY(mu_) = false;
  std::map<std::string, Bucket> buckets_ ABSL_GUARDED_BY(mu_);
  int agent_streams_ ABSL_GUARDED_BY(mu_) = 0;
  int watch_streams_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace hpcai500

#endif  // HPCAI500_SERVER_AUTH_ACCESS_CONTROL_H_
