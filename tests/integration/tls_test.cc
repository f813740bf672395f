// TLS with real processes: hpcai500d with --tls-cert/--tls-key and
// --tls-client-ca, agents with client certificates, the CLI with --tls-ca and
// curl on the HTTPS port. The certificates are made by openssl in the
// cluster's folder (tests/common/test_certificates.h).
#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "cli/client/exit_codes.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/common/test_certificates.h"
#include "tests/integration/harness.h"

namespace hpcai500::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class TlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    certs_ = std::make_unique<TestCertificates>(cluster_.dir() + "/certs");
    ASSERT_TRUE(certs_->ok()) << certs_->log();
    cluster_.set_cli_flags({"--tls-ca", certs_->path("ca.pem")});
    ASSERT_TRUE(
        cluster_.StartCoordinator({"--tls-cert", certs_->path("server.pem"),
                                   "--tls-key", certs_->path("server.key"),
                                   "--tls-client-ca", certs_->path("ca.pem")}))
        << ReadFile(cluster_.dir() + "/hpcai500d.log");
  }
  void TearDown() override {
    if (HasFailure()) cluster_.KeepFiles();
  }

  // `hpcai500 ARGS...` against the cluster without the harness's --tls-ca.
  CommandResult CliWithout(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {BinaryPath("hpcai500"), "--coordinator",
                                     cluster_.grpc_address()};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv, std::chrono::seconds(60));
  }

  // Agent flags presenting the node-a certificate.
  std::vector<std::string> NodeACertificate() const {
    return {"--tls-ca",   certs_->path("ca.pem"),
            "--tls-cert", certs_->path("node-a.pem"),
            "--tls-key",  certs_->path("node-a.key")};
  }

  TestCluster cluster_;
  std::unique_ptr<TestCertificates> certs_;
};

TEST_F(TlsTest, CliWithTheRightCaIsServed) {
  CommandResult list = cluster_.Cli({"list"});
  EXPECT_EQ(list.exit_code, 0) << list.err;
  CommandResult nodes = cluster_.Cli({"nodes"});
  EXPECT_EQ(nodes.exit_code, 0) << nodes.err;
}

TEST_F(TlsTest, PlaintextCliIsRefusedInOneLineNamingTheCoordinator) {
  CommandResult plain = CliWithout({"nodes"});
  EXPECT_EQ(plain.exit_code,
            kExitUnavailable);  // retryable: a network fault looks the same
  EXPECT_THAT(plain.err, HasSubstr("cannot reach the coordinator at " +
                                   cluster_.grpc_address()));
  EXPECT_EQ(std::count(plain.err.begin(), plain.err.end(), '\n'), 1)
      << plain.err;
}

TEST_F(TlsTest, CliTrustingAnotherCaFailsInOneLineNamingTheTlsFailure) {
  CommandResult wrong =
      CliWithout({"--tls-ca", certs_->path("other-ca.pem"), "nodes"});
  EXPECT_EQ(wrong.exit_code, 2);
  EXPECT_THAT(wrong.err, HasSubstr(cluster_.grpc_address()));
  // gRPC's words: "Ssl handshake failed: ... certificate verify failed".
  EXPECT_THAT(wrong.err, HasSubstr("andshake failed"));
  EXPECT_THAT(wrong.err, HasSubstr("certificate verify failed"));
  EXPECT_EQ(std::count(wrong.err.begin(), wrong.err.end(), '\n'), 1)
      << wrong.err;
}

TEST_F(TlsTest, AgentRegistersUnderTheNameItsCertificateCarries) {
  ASSERT_TRUE(cluster_.StartAgent("node-a", 1, NodeACertificate()))
      << ReadFile(cluster_.agent_log("node-a"));
  CommandResult nodes = cluster_.Cli({"nodes"});
  EXPECT_THAT(nodes.out, HasSubstr("node-a"));
}

TEST_F(TlsTest, AgentRegisteringUnderAnotherNameIsRefused) {
  cluster_.LaunchAgent("node-b", 1, NodeACertificate());
  // Without a certificate an agent is refused too.
  cluster_.LaunchAgent("node-c", 1, {"--tls-ca", certs_->path("ca.pem")});
  EXPECT_TRUE(WaitFor(
      [&] {
        return ReadFile(cluster_.agent_log("node-b"))
                       .find("PERMISSION_DENIED") != std::string::npos &&
               ReadFile(cluster_.agent_log("node-c")).find("UNAUTHENTICATED") !=
                   std::string::npos;
      },
      std::chrono::seconds(20)))
      << ReadFile(cluster_.agent_log("node-b"))
      << ReadFile(cluster_.agent_log("node-c"));
  EXPECT_THAT(ReadFile(cluster_.agent_log("node-b")),
              HasSubstr("names 'node-a', not 'node-b'"));
  CommandResult nodes = cluster_.Cli({"nodes"});
  EXPECT_EQ(nodes.exit_code, 0) << nodes.err;
  EXPECT_THAT(nodes.out, Not(HasSubstr("node-b")));
  EXPECT_THAT(nodes.out, Not(HasSubstr("node-c")));
  EXPECT_THAT(ReadFile(cluster_.dir() + "/hpcai500d.log"),
              HasSubstr("refusing an agent"));
}

TEST_F(TlsTest, HttpsServesTheLeaderboardAndPlainHttpGetsNothing) {
  const std::string https =
      "https://127.0.0.1:" + std::to_string(cluster_.http_port()) +
      "/api/v1/leaderboard";
  CommandResult curl = RunCommand({"/usr/bin/curl", "-sS", "--fail", "--cacert",
                                   certs_->path("ca.pem"), https},
                                  std::chrono::seconds(30));
  ASSERT_EQ(curl.exit_code, 0) << curl.err;
  EXPECT_TRUE(nlohmann::json::accept(curl.out)) << curl.out;

  CommandResult untrusted = RunCommand(
      {"/usr/bin/curl", "-sS", "--cacert", certs_->path("other-ca.pem"), https},
      std::chrono::seconds(30));
  EXPECT_NE(untrusted.exit_code, 0);

  int status = -1;
  EXPECT_EQ(cluster_.HttpGet("/api/v1/leaderboard", &status), "");
  EXPECT_EQ(status, 0);  // no HTTP answer at all
}

// The audit rows of failed handshakes (`hpcai500 audit --json`), as
// "PORT|PEER|DETAIL" lines.
std::string TlsFailureRows(TestCluster& cluster) {
  CommandResult audit = cluster.Cli({"audit", "--json"});
  if (audit.exit_code != 0 || !nlohmann::json::accept(audit.out)) return "";
  std::string rows;
  for (const nlohmann::json& entry :
       nlohmann::json::parse(audit.out).value("entries", nlohmann::json())) {
    if (entry.value("action", "") != "tls_handshake_failed") continue;
    rows += entry.value("target", "") + "|" + entry.value("peer", "") + "|" +
            entry.value("detail", "") + "\n";
  }
  return rows;
}

TEST_F(TlsTest, FailedHandshakesAreAuditedAndCounted) {
  // A plaintext CLI and an agent whose certificate another CA signed, on
  // the gRPC port; plain HTTP on the HTTPS port.
  EXPECT_EQ(CliWithout({"nodes"}).exit_code, kExitUnavailable);
  cluster_.LaunchAgent("node-a", 1,
                       {"--tls-ca", certs_->path("ca.pem"), "--tls-cert",
                        certs_->path("other-node-a.pem"), "--tls-key",
                        certs_->path("other-node-a.key")});
  int status = -1;
  cluster_.HttpGet("/api/v1/leaderboard", &status);
  EXPECT_EQ(status, 0);

  std::string rows;
  EXPECT_TRUE(WaitFor(
      [&] {
        rows = TlsFailureRows(cluster_);
        return rows.find("grpc port|unknown|") != std::string::npos &&
               rows.find("wrong version number") != std::string::npos &&
               rows.find("certificate verify failed") != std::string::npos &&
               rows.find("https port|ipv4:127.0.0.1:") != std::string::npos;
      },
      std::chrono::seconds(30)))
      << rows << ReadFile(cluster_.dir() + "/hpcai500d.log");
  EXPECT_THAT(ReadFile(cluster_.dir() + "/hpcai500d.log"),
              HasSubstr("TLS handshake failed on the https port from "
                        "ipv4:127.0.0.1:"));

  CommandResult metrics = RunCommand(
      {"/usr/bin/curl", "-sS", "--fail", "--cacert", certs_->path("ca.pem"),
       "https://127.0.0.1:" + std::to_string(cluster_.http_port()) +
           "/metrics"},
      std::chrono::seconds(30));
  ASSERT_EQ(metrics.exit_code, 0) << metrics.err;
  // At least the plaintext CLI and one try of the agent; plain HTTP once.
  EXPECT_THAT(metrics.out,
              ::testing::ContainsRegex(
                  "hpcai500_tls_handshake_failures_total\\{port=\"grpc\"\\} "
                  "([2-9]|[1-9][0-9]+)\n"));
  EXPECT_THAT(
      metrics.out,
      HasSubstr("hpcai500_tls_handshake_failures_total{port=\"https\"} 1\n"));
}

}  // namespace
}  // namespace hpcai500::testing
