#include "server/auth/tls_failures.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/log.h"

namespace hpcai500 {
namespace {

// Where failures go once a window tells kMaxKindsPerWindow kinds apart on a
// port.
constexpr char kOtherAddresses[] = "other addresses";

}  // namespace

std::string PeerAddress(absl::string_view peer) {
  if (peer.empty()) return "unknown";
  const size_t colon = peer.rfind(':');
  if (colon == absl::string_view::npos || colon + 1 == peer.size()) {
    return std::string(peer);
  }
  for (char c : peer.substr(colon + 1)) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) {
      return std::string(peer);
    }
  }
  // "ipv4:A.B.C.D:PORT" has two colons; an IPv6 address is bracketed.
  const bool ipv4 = absl::StartsWith(peer, "ipv4:") && peer.find(':') != colon;
  const bool ipv6 = colon > 0 && peer[colon - 1] == ']';
  return std::string(ipv4 || ipv6 ? peer.substr(0, colon) : peer);
}

TlsFailureAudit::TlsFailureAudit(AccessControl* access, Clock* clock)
    : access_(access), clock_(clock) {
  totals_[kGrpcPort] = 0;
  totals_[kHttpsPort] = 0;
}

void TlsFailureAudit::Record(absl::string_view port, absl::string_view peer,
                             absl::string_view reason) {
  std::vector<Row> rows;
  {
    absl::MutexLock lock(&mu_);
    EndWindowIfDueLocked(clock_->NowMs(), &rows);
    ++totals_[std::string(port)];
    Key key{std::string(port), PeerAddress(peer), std::string(reason)};
    auto it = window_.find(key);
    if (it == window_.end()) {
      int kinds = 0;
      for (const auto& [seen, unwritten] : window_) {
        if (seen.port == port) ++kinds;
      }
      if (kinds >= kMaxKindsPerWindow) {
        key = Key{std::string(port), kOtherAddresses, ""};
        it = window_.find(key);
      }
    }
    if (it == window_.end()) {
      window_.emplace(key, Unwritten{std::string(peer), std::string(reason)});
      rows.push_back({std::string(port),
                      peer.empty() ? key.address : std::string(peer),
                      std::string(reason)});
    } else {
      it->second.peer = std::string(peer);
      it->second.reason = std::string(reason);
      ++it->second.count;
    }
  }
  Write(rows);
}

void TlsFailureAudit::Flush() {
  std::vector<Row> rows;
  {
    absl::MutexLock lock(&mu_);
    EndWindowIfDueLocked(clock_->NowMs(), &rows);
  }
  Write(rows);
}

void TlsFailureAudit::EndWindowIfDueLocked(int64_t now_ms,
                                           std::vector<Row>* rows) {
  if (window_start_ms_ != 0 && now_ms - window_start_ms_ < kWindowMs) return;
  for (const auto& [key, unwritten] : window_) {
    if (unwritten.count == 0) continue;
    rows->push_back(
        {key.port, key.address,
         absl::StrCat(unwritten.count, " more within ", kWindowMs / 1000,
                      " s; the last from ",
                      unwritten.peer.empty() ? key.address : unwritten.peer,
                      ": ", unwritten.reason)});
  }
  window_.clear();
  window_start_ms_ = now_ms;
}

void TlsFailureAudit::Write(const std::vector<Row>& rows) {
  for (const Row& row : rows) {
    const std::string target = absl::StrCat(row.port, " port");
    LogWarning(absl::StrCat("TLS handshake failed on the ", target, " from ",
                            row.peer, ": ", row.detail));
    access_->Audit(nullptr, "tls_handshake_failed", target, row.peer,
                   /*allowed=*/false, row.detail);
  }
}

std::string TlsFailureAudit::MetricsText() const {
  std::string text =
      "# HELP hpcai500_tls_handshake_failures_total TLS handshakes that "
      "failed, by port (a plaintext client, a certificate another CA signed, "
      "a client that does not trust this server's).\n"
      "# TYPE hpcai500_tls_handshake_failures_total counter\n";
  absl::MutexLock lock(&mu_);
  for (const auto& [port, total] : totals_) {
    absl::StrAppend(&text, "hpcai500_tls_handshake_failures_total{port=\"",
                    port, "\"} ", total, "\n");
  }
  return text;
}

}  // namespace hpcai500
