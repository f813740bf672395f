#include "server/auth/tls.h"

#include <grpc/grpc_security_constants.h>
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/tls_files.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "methodology/registry.h"
#include "server/auth/access_control.h"
#include "server/coordinator/coordinator.h"
#include "server/grpc_services.h"
#include "server/store/store.h"
#include "tests/common/test_certificates.h"

namespace hpcai500 {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// An AuthContext with the properties a test gives it; "authenticated" when a
// peer identity property name is set, as gRPC does for a verified
// certificate.
class FakeAuthContext final : public grpc::AuthContext {
 public:
  bool IsPeerAuthenticated() const override { return !identity_.empty(); }
  std::vector<grpc::string_ref> GetPeerIdentity() const override {
    return FindPropertyValues(identity_);
  }
  std::string GetPeerIdentityPropertyName() const override { return identity_; }
  std::vector<grpc::string_ref> FindPropertyValues(
      const std::string& name) const override {
    std::vector<grpc::string_ref> values;
    auto range = properties_.equal_range(name);
    for (auto it = range.first; it != range.second; ++it) {
      values.emplace_back(it->second);
    }
    return values;
  }
  grpc::AuthPropertyIterator begin() const override { return Iterator(); }
  grpc::AuthPropertyIterator end() const override { return Iterator(); }
  void AddProperty(const std::string& key,
                   const grpc::string_ref& value) override {
    properties_.emplace(key, std::string(value.data(), value.size()));
  }
  bool SetPeerIdentityPropertyName(const std::string& name) override {
    identity_ = name;
    return true;
  }

 private:
  // The code under test never iterates; an empty range is enough.
  struct Iterator : grpc::AuthPropertyIterator {};

  std::multimap<std::string, std::string> properties_;
  std::string identity_;
};

// What gRPC's SSL transport reports for a verified certificate with these
// DNS subject alternative names and common name.
FakeAuthContext VerifiedCertificate(const std::vector<std::string>& dns_sans,
                                    const std::string& common_name) {
  FakeAuthContext auth;
  auth.AddProperty(GRPC_TRANSPORT_SECURITY_TYPE_PROPERTY_NAME, "ssl");
  auth.AddProperty(GRPC_X509_CN_PROPERTY_NAME, common_name);
  for (const std::string& name : dns_sans) {
    auth.AddProperty(GRPC_X509_SAN_PROPERTY_NAME, name);
    auth.AddProperty(GRPC_PEER_DNS_PROPERTY_NAME, name);
  }
  auth.SetPeerIdentityPropertyName(dns_sans.empty()
                                       ? GRPC_X509_CN_PROPERTY_NAME
                                       : GRPC_X509_SAN_PROPERTY_NAME);
  return auth;
}

TEST(CertificateNames, AreTheDnsNamesWhenThereAreAny) {
  EXPECT_THAT(CertificateNames(
                  VerifiedCertificate({"node-a", "a.rack1"}, "ignored-cn")),
              ElementsAre("node-a", "a.rack1"));
}

TEST(CertificateNames, FallBackToTheCommonName) {
  EXPECT_THAT(CertificateNames(VerifiedCertificate({}, "node-a")),
              ElementsAre("node-a"));
}

TEST(CertificateNames, AreNoneWithoutAVerifiedCertificate) {
  FakeAuthContext plaintext;
  plaintext.AddProperty(GRPC_TRANSPORT_SECURITY_TYPE_PROPERTY_NAME, "ssl");
  plaintext.AddProperty(GRPC_X509_CN_PROPERTY_NAME, "node-a");  // unverified
  EXPECT_THAT(CertificateNames(plaintext), IsEmpty());
}

TEST(CheckAgentCertificate, AcceptsTheNodeItsCertificateNames) {
  EXPECT_TRUE(
      CheckAgentCertificate(VerifiedCertificate({"node-a"}, "x"), "node-a")
          .ok());
  EXPECT_TRUE(
      CheckAgentCertificate(VerifiedCertificate({}, "node-a"), "node-a").ok());
}

TEST(CheckAgentCertificate, OtherNodeIsPermissionDeniedNamingBoth) {
  absl::Status status =
      CheckAgentCertificate(VerifiedCertificate({"node-a"}, "x"), "node-b");
  EXPECT_EQ(status.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(status.message(), HasSubstr("'node-a'"));
  EXPECT_THAT(status.message(), HasSubstr("'node-b'"));
}

TEST(CheckAgentCertificate, CommonNameDoesNotCountBesideDnsNames) {
  EXPECT_EQ(
      CheckAgentCertificate(VerifiedCertificate({"node-a"}, "node-b"), "node-b")
          .code(),
      absl::StatusCode::kPermissionDenied);
}

TEST(CheckAgentCertificate, NameMustMatchExactly) {
  for (const char* node : {"NODE-A", "node-a.", "node", "node-a2"}) {
    EXPECT_EQ(CheckAgentCertificate(VerifiedCertificate({"node-a"}, "x"), node)
                  .code(),
              absl::StatusCode::kPermissionDenied)
        << node;
  }
}

TEST(CheckAgentCertificate, NoCertificateIsUnauthenticatedNamingTheNode) {
  absl::Status status = CheckAgentCertificate(FakeAuthContext(), "node-b");
  EXPECT_EQ(status.code(), absl::StatusCode::kUnauthenticated);
  EXPECT_THAT(status.message(), HasSubstr("'node-b'"));
}

TEST(DescribeServerTls, SaysWhetherAgentsNeedCertificates) {
  EXPECT_THAT(DescribeServerTls(TlsFiles()), HasSubstr("tls off"));
  TlsFiles files;
  files.cert_pem = "c";
  files.key_pem = "k";
  EXPECT_THAT(DescribeServerTls(files), HasSubstr("no client certificates"));
  files.ca_pem = "ca";
  EXPECT_THAT(DescribeServerTls(files), HasSubstr("agents must present"));
}

// A loopback coordinator serving gRPC over TLS with --tls-client-ca, and
// agents and clients dialling it with the test certificates.
class TlsServicesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/hpcai500_tls_test_XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    certs_ = std::make_unique<testing::TestCertificates>(dir_ + "/certs");
    ASSERT_TRUE(certs_->ok()) << certs_->log();
    store_ = *Store::Open(dir_ + "/t.db");
    coordinator_ =
        *Coordinator::Create(store_.get(), &clock_, &Registry::Builtin(), {});
    reads_ = std::make_unique<RunReads>(store_.get(), &Registry::Builtin(),
                                        coordinator_.get());
    // Auth off (no token): the certificate is the only check here.
    access_ = std::make_unique<AccessControl>(store_.get(), &clock_,
                                              std::nullopt, "");
    client_service_ = std::make_unique<ClientServiceImpl>(
        coordinator_.get(), reads_.get(), access_.get());
    agent_service_ = std::make_unique<AgentServiceImpl>(
        coordinator_.get(), access_.get(), /*check_agent_certificates=*/true);
    TlsFileFlags flags;
    flags.cert = certs_->path("server.pem");
    flags.key = certs_->path("server.key");
    flags.ca = certs_->path("ca.pem");
    absl::StatusOr<TlsFiles> files = LoadServerTlsFiles(flags);
    ASSERT_TRUE(files.ok()) << files.status();
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0",
                             CoordinatorServerCredentials(*files), &port_);
    builder.RegisterService(client_service_.get());
    builder.RegisterService(agent_service_.get());
    std::vector<
        std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>>
        interceptors;
    interceptors.push_back(
        std::make_unique<AuthInterceptorFactory>(access_.get()));
    builder.experimental().SetInterceptorCreators(std::move(interceptors));
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
  }

  void TearDown() override {
    coordinator_->Shutdown();
    server_->Shutdown(std::chrono::system_clock::now() +
                      std::chrono::seconds(1));
    server_.reset();
    agent_service_->WaitForStreams();  // their OnDone may still run
    coordinator_.reset();
    store_.reset();
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  // Credentials trusting `ca`, presenting `leaf` (.pem and .key) if given.
  std::shared_ptr<grpc::ChannelCredentials> Credentials(
      const std::string& ca, const std::string& leaf = "") {
    TlsFiles files;
    files.ca_pem = certs_->pem(ca);
    if (!leaf.empty()) {
      files.cert_pem = certs_->pem(leaf + ".pem");
      files.key_pem = certs_->pem(leaf + ".key");
    }
    return CoordinatorChannelCredentials(files);
  }

  std::shared_ptr<grpc::Channel> Channel(
      const std::shared_ptr<grpc::ChannelCredentials>& credentials) {
    return grpc::CreateChannel("127.0.0.1:" + std::to_string(port_),
                               credentials);
  }

  // Opens an agent stream and registers as `node`: OK once Registered came
  // back, else how the coordinator ended the stream.
  grpc::Status Register(
      const std::shared_ptr<grpc::ChannelCredentials>& credentials,
      const std::string& node) {
    auto agent = v1::AgentService::NewStub(Channel(credentials));
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::seconds(10));
    auto stream = agent->Connect(&context);
    v1::AgentMessage hello;
    hello.mutable_register_()->set_name(node);
    hello.mutable_register_()->set_slots(1);
    stream->Write(hello);
    v1::CoordinatorMessage reply;
    if (stream->Read(&reply) && reply.has_registered()) {
      context.TryCancel();
      stream->Finish().IgnoreError();
      return grpc::Status::OK;
    }
    return stream->Finish();
  }

  // The nodes the coordinator knows, by name.
  std::vector<std::string> NodeNames() {
    std::vector<std::string> names;
    absl::StatusOr<v1::ListNodesResponse> nodes = coordinator_->ListNodes();
    EXPECT_TRUE(nodes.ok()) << nodes.status();
    if (!nodes.ok()) return names;
    for (const v1::Node& node : nodes->nodes()) {
      names.push_back(node.name());
    }
    return names;
  }

  std::string dir_;
  std::unique_ptr<testing::TestCertificates> certs_;
  RealClock clock_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<AccessControl> access_;
  std::unique_ptr<Coordinator> coordinator_;
  std::unique_ptr<RunReads> reads_;
  std::unique_ptr<ClientServiceImpl> client_service_;
  std::unique_ptr<AgentServiceImpl> agent_service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

TEST_F(TlsServicesTest, AgentWithCertificateForItsNameRegisters) {
  grpc::Status status = Register(Credentials("ca.pem", "node-a"), "node-a");
  EXPECT_TRUE(status.ok()) << status.error_message();
  EXPECT_THAT(NodeNames(), ElementsAre("node-a"));
}

TEST_F(TlsServicesTest, AgentWithCertificateForAnotherNameIsPermissionDenied) {
  grpc::Status status = Register(Credentials("ca.pem", "node-a"), "node-b");
  EXPECT_EQ(status.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(status.error_message(), HasSubstr("'node-a'"));
  EXPECT_THAT(status.error_message(), HasSubstr("'node-b'"));
  EXPECT_THAT(NodeNames(), IsEmpty());
}

TEST_F(TlsServicesTest, AgentWithoutCertificateIsUnauthenticated) {
  grpc::Status status = Register(Credentials("ca.pem"), "node-a");
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(NodeNames(), IsEmpty());
}

TEST_F(TlsServicesTest, CertificateFromAnotherCaFailsTheHandshake) {
  grpc::Status status =
      Register(Credentials("ca.pem", "other-node-a"), "node-a");
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE)
      << status.error_message();
  EXPECT_THAT(NodeNames(), IsEmpty());
}

TEST_F(TlsServicesTest, ClientWithoutCertificateIsServed) {
  auto client = v1::ClientService::NewStub(Channel(Credentials("ca.pem")));
  grpc::ClientContext context;
  v1::ListNodesResponse response;
  grpc::Status status =
      client->ListNodes(&context, v1::ListNodesRequest(), &response);
  EXPECT_TRUE(status.ok()) << status.error_message();
}

TEST_F(TlsServicesTest, PlaintextAndWrongCaAreUnavailable) {
  for (const auto& credentials :
       {grpc::InsecureChannelCredentials(), Credentials("other-ca.pem")}) {
    auto client = v1::ClientService::NewStub(Channel(credentials));
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::seconds(10));
    v1::ListNodesResponse response;
    grpc::Status status =
        client->ListNodes(&context, v1::ListNodesRequest(), &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE)
        << status.error_message();
    std::printf("refused: %s\n", status.error_message().c_str());
  }
}

}  // namespace
}  // namespace hpcai500
