// Failed TLS handshakes into the audit trail: one row at once per address
// and window, the rest counted into one row when the window ends, a bound on
// the addresses told apart, the counter; and gRPC 1.51's log lines (copied
// from a real hpcai500d) read back into peer and reason.
#include "server/auth/tls_failures.h"

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/auth/grpc_log.h"
#include "tests/common/fake_clock.h"

namespace hpcai500 {
namespace {

using ::hpcai500::testing::FakeClock;
using ::testing::HasSubstr;

class TlsFailureAuditTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/hpcai500_tls_failures_test_XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    store_ = *Store::Open(dir_ + "/a.db");
    access_ = std::make_unique<AccessControl>(store_.get(), &clock_,
                                              std::nullopt, "");
    audit_ = std::make_unique<TlsFailureAudit>(access_.get(), &clock_);
  }
  void TearDown() override {
    audit_.reset();
    access_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  // The audit trail, oldest first.
  std::vector<v1::AuditEntry> Rows() {
    std::vector<v1::AuditEntry> rows = *store_->ListAudit(1000, 0);
    return {rows.rbegin(), rows.rend()};
  }

  std::string dir_;
  FakeClock clock_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<AccessControl> access_;
  std::unique_ptr<TlsFailureAudit> audit_;
};

TEST_F(TlsFailureAuditTest, FirstFailureOfAnAddressIsAuditedAtOnce) {
  audit_->Record(kHttpsPort, "ipv4:10.0.0.5:41234", "http request");
  std::vector<v1::AuditEntry> rows = Rows();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].action(), "tls_handshake_failed");
  EXPECT_EQ(rows[0].target(), "https port");
  EXPECT_EQ(rows[0].peer(), "ipv4:10.0.0.5:41234");
  EXPECT_EQ(rows[0].detail(), "http request");
  EXPECT_FALSE(rows[0].allowed());
  EXPECT_EQ(rows[0].user(), "");
}

TEST_F(TlsFailureAuditTest, FloodFromOneAddressIsOneRowAndOneSummary) {
  for (int i = 0; i < 1000; ++i) {
    audit_->Record(kGrpcPort, absl::StrCat("ipv4:10.0.0.5:", 40000 + i),
                   "wrong version number");
  }
  audit_->Flush();
  EXPECT_EQ(Rows().size(), 1u);  // the window has not ended
  clock_.now_ms += TlsFailureAudit::kWindowMs;
  audit_->Flush();
  std::vector<v1::AuditEntry> rows = Rows();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1].peer(), "ipv4:10.0.0.5");
  EXPECT_THAT(rows[1].detail(), HasSubstr("999 more within 60 s"));
  EXPECT_THAT(
      rows[1].detail(),
      HasSubstr("the last from ipv4:10.0.0.5:40999: wrong version number"));
  // A new window: the next failure is audited at once again.
  audit_->Record(kGrpcPort, "ipv4:10.0.0.5:50000", "again");
  EXPECT_EQ(Rows().size(), 3u);
  EXPECT_THAT(audit_->MetricsText(),
              HasSubstr("hpcai500_tls_handshake_failures_total{port=\"grpc\"} "
                        "1001\n"));
}

TEST_F(TlsFailureAuditTest, ManyAddressesShareOneEntryPastTheBound) {
  constexpr int kAddresses = TlsFailureAudit::kMaxKindsPerWindow + 50;
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < kAddresses; ++i) {
      audit_->Record(kHttpsPort, absl::StrCat("ipv6:[fd00::", i, "]:443"),
                     "unknown ca");
    }
  }
  clock_.now_ms += TlsFailureAudit::kWindowMs;
  audit_->Flush();
  const size_t bound = 2 * (TlsFailureAudit::kMaxKindsPerWindow + 1);
  std::vector<v1::AuditEntry> rows = Rows();
  EXPECT_EQ(rows.size(), bound);
  EXPECT_EQ(rows.back().peer(), "other addresses");
  EXPECT_THAT(audit_->MetricsText(),
              HasSubstr(absl::StrCat(
                  "hpcai500_tls_handshake_failures_total{port=\"https\"} ",
                  3 * kAddresses, "\n")));
}

TEST_F(TlsFailureAuditTest, AnotherReasonFromTheSameAddressIsAuditedAtOnce) {
  audit_->Record(kGrpcPort, "", "wrong version number");
  audit_->Record(kGrpcPort, "", "certificate verify failed");
  std::vector<v1::AuditEntry> rows = Rows();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1].detail(), "certificate verify failed");
}

TEST_F(TlsFailureAuditTest, UnknownPeersAreCountedTogether) {
  audit_->Record(kGrpcPort, "", "certificate verify failed");
  audit_->Record(kGrpcPort, "", "certificate verify failed");
  clock_.now_ms += TlsFailureAudit::kWindowMs;
  audit_->Flush();
  std::vector<v1::AuditEntry> rows = Rows();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].peer(), "unknown");
  EXPECT_EQ(rows[1].peer(), "unknown");
  EXPECT_THAT(rows[1].detail(), HasSubstr("1 more within 60 s"));
}

TEST_F(TlsFailureAuditTest, MetricsListBothPortsFromTheStart) {
  EXPECT_THAT(audit_->MetricsText(),
              HasSubstr("# TYPE hpcai500_tls_handshake_failures_total counter\n"
                        "hpcai500_tls_handshake_failures_total{port=\"grpc\"} "
                        "0\nhpcai500_tls_handshake_failures_total{port="
                        "\"https\"} 0\n"));
}

TEST(PeerAddress, DropsThePortOfIpv4AndBracketedIpv6) {
  EXPECT_EQ(PeerAddress("ipv4:10.0.0.5:41234"), "ipv4:10.0.0.5");
  EXPECT_EQ(PeerAddress("ipv6:[::1]:41234"), "ipv6:[::1]");
  EXPECT_EQ(PeerAddress(""), "unknown");
  EXPECT_EQ(PeerAddress("unix:/run/x.sock"), "unix:/run/x.sock");
}

TEST(ParseGrpcHandshakeFailure, ReadsAnSslFailureWithoutAPeer) {
  std::optional<GrpcHandshakeFailure> failure = ParseGrpcHandshakeFailure(
      "Security handshake failed: UNKNOWN:Ssl handshake failed: SSL_ERROR_SSL: "
      "error:0A00010B:SSL routines::wrong version number {tsi_code:10, "
      "tsi_error:\"TSI_PROTOCOL_FAILURE\", "
      "created_time:\"2026-12-05T04:17:19.772980526+00:00\", file_line:393, "
      "file:\"./src/core/lib/security/transport/security_handshaker.cc\"}");
  ASSERT_TRUE(failure.has_value());
  EXPECT_EQ(failure->peer, "");
  EXPECT_EQ(failure->reason,
            "Ssl handshake failed: SSL_ERROR_SSL: error:0A00010B:SSL "
            "routines::wrong version number");
}

TEST(ParseGrpcHandshakeFailure, ReadsAClosedSocketWithItsPeer) {
  std::optional<GrpcHandshakeFailure> failure = ParseGrpcHandshakeFailure(
      "Security handshake failed: UNKNOWN:Handshake read failed "
      "{file:\"./src/core/lib/security/transport/security_handshaker.cc\", "
      "file_line:487, created_time:\"2026-12-05T04:17:20.805304816+00:00\", "
      "children:[INTERNAL:Socket closed {target_address:\"ipv4:127.0.0.1:"
      "54996\", grpc_status:14, fd:22}]}");
  ASSERT_TRUE(failure.has_value());
  EXPECT_EQ(failure->peer, "ipv4:127.0.0.1:54996");
  EXPECT_EQ(failure->reason, "Handshake read failed: Socket closed");
}

TEST(ParseGrpcHandshakeFailure, IgnoresOtherLines) {
  EXPECT_FALSE(ParseGrpcHandshakeFailure(
                   "Handshaking failed: UNKNOWN:Ssl handshake failed")
                   .has_value());
  EXPECT_FALSE(
      ParseGrpcHandshakeFailure("Using polling engine: epoll1").has_value());
}

}  // namespace
}  // namespace hpcai500
