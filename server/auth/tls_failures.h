// Failed TLS handshakes on hpcai500d's ports, into the audit trail and the
// counter hpcai500_tls_handshake_failures_total{port} of /metrics. A
// handshake fails before any call, so no caller is known: a row names the
// port, the peer when it is known and the reason.
//
// A flood of failures must not fill the disk, so rows are rate-limited per
// port, peer address (the address without its port; "unknown" where the
// peer is not known) and reason, in windows of kWindowMs: the first failure
// of a kind in a window is audited (and logged) at once, the later ones only
// counted, and Flush writes one row for each kind that ended its window with
// failures counted but not written. At most kMaxKindsPerWindow kinds per
// port are told apart in a window; failures of further ones share one
// entry, "other addresses". So a window writes at most 2 *
// (kMaxKindsPerWindow + 1) rows per port, whatever arrives; the counter
// counts every failure.
//
// Thread-safe.
#ifndef HPCAI500_SERVER_AUTH_TLS_FAILURES_H_
#define HPCAI500_SERVER_AUTH_TLS_FAILURES_H_

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "server/auth/access_control.h"

namespace hpcai500 {

// The address part of a peer as gRPC writes peers: "ipv4:10.0.0.5" for
// "ipv4:10.0.0.5:41234", "ipv6:[::1]" for "ipv6:[::1]:41234"; "unknown" for
// ""; anything else as it is.
std::string PeerAddress(absl::string_view peer);

// The ports, as rows and the counter's label name them.
inline constexpr char kGrpcPort[] = "grpc";
inline constexpr char kHttpsPort[] = "https";

class TlsFailureAudit {
 public:
  static constexpr int64_t kWindowMs = 60'000;
  static constexpr int kMaxKindsPerWindow = 32;

  // `access` (where rows are written) and `clock` are borrowed and must
  // outlive this.
  TlsFailureAudit(AccessControl* access, Clock* clock);

  // One failed handshake on `port` (kGrpcPort, kHttpsPort) from `peer` (as gRPC
  // writes peers, "ipv4:10.0.0.5:41234"; "" when unknown) for `reason`:
  // counted, and audited now when it is the first of its kind (address and
  // reason) in the window.
  void Record(absl::string_view port, absl::string_view peer,
              absl::string_view reason) ABSL_LOCKS_EXCLUDED(mu_);

  // Ends the window once kWindowMs passed since it began: one row per kind
  // with failures not yet written. Call about once a second (a
  // window also ends at the first Record after it).
  void Flush() ABSL_LOCKS_EXCLUDED(mu_);

  // The counter's HELP and TYPE lines and one series per port (both ports
  // from the start, at 0).
  std::string MetricsText() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // One kind's failures in the current window.
  struct Unwritten {
    std::string peer;    // the last failure's
    std::string reason;  // the last failure's
    int64_t count = 0;   // failures since the row written at the first
  };
  // A kind: port, peer address and reason (overflow: port, kOtherAddresses
  // and "").
  struct Key {
    std::string port, address, reason;
    bool operator<(const Key& other) const {
      return std::tie(port, address, reason) <
             std::tie(other.port, other.address, other.reason);
    }
  };
  // A row to write once mu_ is released (no lock is held across I/O).
  struct Row {
    std::string port, peer, detail;
  };
  // Moves what the window left unwritten into *rows and starts a new window
  // when kWindowMs passed since the current one began.
  void EndWindowIfDueLocked(int64_t now_ms, std::vector<Row>* rows)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Write(const std::vector<Row>& rows);

  // Constant after construction.
  AccessControl* const access_;
  Clock* const clock_;

  mutable absl::Mutex mu_;
  std::map<std::string, int64_t> totals_ ABSL_GUARDED_BY(mu_);  // by port
  int64_t window_start_ms_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<Key, Unwritten> window_ ABSL_GUARDED_BY(mu_);
};

}  // namespace hpcai500

#endif  // HPCAI500_SERVER_AUTH_TLS_FAILURES_H_
