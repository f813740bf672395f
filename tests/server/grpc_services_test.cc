#include "server/grpc_services.h"

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <cstdio>
#include <future>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "server/auth/access_control.h"
#include "server/auth/auth.h"

namespace hpcai500 {
namespace {

constexpr char kSpec[] =
    "name: smoke\nworkload: image_classification\nconfig: "
    "fashion_mnist_smoke\nlevel: free\nnodes: 1\nranks_per_node: 1\ndevice: "
    "cpu\nbatch_size: 64\nprecision: fp32\nseed: 1\nsystem: box\n";

// A loopback hpcai500d (no HTTP) with a bearer token.
class GrpcServicesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/hpcai500_grpc_test_XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    store_ = *Store::Open(dir_ + "/g.db");
    coordinator_ =
        *Coordinator::Create(store_.get(), &clock_, &Registry::Builtin(), {});
    reads_ = std::make_unique<RunReads>(store_.get(), &Registry::Builtin(),
                                        coordinator_.get());
    absl::StatusOr<TokenAuthenticator> tokens =
        TokenAuthenticator::Open(store_.get(), dir_ + "/g.db.token-key");
    ASSERT_TRUE(tokens.ok()) << tokens.status();
    for (auto [user, role, node] :
         {std::tuple{"vera", Role::kViewer, ""},
          std::tuple{"alice", Role::kOperator, ""},
          std::tuple{"bob", Role::kOperator, ""},
          std::tuple{"root", Role::kAdmin, ""},
          std::tuple{"agent-a", Role::kAgent, "node-a"}}) {
      tokens_[user] = tokens->Create(user, role, node, 1)->text;
    }
    access_ = std::make_unique<AccessControl>(
        store_.get(), &clock_, *std::move(tokens), "s3cret", limits_);
    client_service_ = std::make_unique<ClientServiceImpl>(
        coordinator_.get(), reads_.get(), access_.get());
    agent_service_ =
        std::make_unique<AgentServiceImpl>(coordinator_.get(), access_.get());
    // The production server: its interceptors, cap and keepalive.
    int port = 0;
    server_ = StartCoordinatorServer(
        "127.0.0.1:0", grpc::InsecureServerCredentials(), client_service_.get(),
        agent_service_.get(), access_.get(), &port);
    ASSERT_NE(server_, nullptr);
    address_ = "127.0.0.1:" + std::to_string(port);
    auto channel =
        grpc::CreateChannel(address_, grpc::InsecureChannelCredentials());
    client_ = v1::ClientService::NewStub(channel);
    agent_ = v1::AgentService::NewStub(channel);
  }
  void TearDown() override {
    coordinator_->Shutdown();
    server_->Shutdown(std::chrono::system_clock::now() +
                      std::chrono::seconds(1));
    server_.reset();
    agent_service_->WaitForStreams();  // their OnDone may still run
    coordinator_.reset();
    store_.reset();
    access_.reset();
    for (const char* suffix : {"", "-wal", "-shm", ".lock", ".token-key"}) {
      std::remove((dir_ + "/g.db" + suffix).c_str());
    }
    rmdir(dir_.c_str());
  }

  static void Authorize(grpc::ClientContext* context) {
    context->AddMetadata("authorization", "Bearer s3cret");
  }

  // Submits kSpec as `user`; returns the status and sets *run_id.
  grpc::Status SubmitAs(const std::string& user, int64_t* run_id = nullptr) {
    grpc::ClientContext context;
    context.AddMetadata("authorization", "Bearer " + tokens_[user]);
    v1::SubmitRequest request;
    request.set_spec_yaml(kSpec);
    v1::SubmitResponse response;
    grpc::Status status = client_->Submit(&context, request, &response);
    if (run_id != nullptr && status.ok()) *run_id = response.run_ids(0);
    return status;
  }
  grpc::Status CancelAs(const std::string& user, int64_t run_id) {
    grpc::ClientContext context;
    context.AddMetadata("authorization", "Bearer " + tokens_[user]);
    v1::CancelRunRequest request;
    request.set_run_id(run_id);
    v1::CancelRunResponse response;
    return client_->CancelRun(&context, request, &response);
  }
  grpc::Status PromoteAs(const std::string& user, int64_t run_id) {
    grpc::ClientContext context;
    context.AddMetadata("authorization", "Bearer " + tokens_[user]);
    v1::PromoteBaselineRequest request;
    request.set_run_id(run_id);
    v1::Baseline response;
    return client_->PromoteBaseline(&context, request, &response);
  }
  // Opens an agent stream with `token` ("" for none) and registers as
  // `node`; returns the stream's first answer (Registered) or its status.
  grpc::Status RegisterAs(const std::string& token, const std::string& node,
                          grpc::ClientContext* context,
                          v1::CoordinatorMessage* reply) {
    if (!token.empty()) {
      context->AddMetadata("authorization", "Bearer " + token);
    }
    auto stream = agent_->Connect(context);
    v1::AgentMessage hello;
    hello.mutable_register_()->set_name(node);
    hello.mutable_register_()->set_slots(1);
    stream->Write(hello);
    if (stream->Read(reply)) return grpc::Status::OK;
    return stream->Finish();
  }
  // The audit rows, newest first.
  std::vector<v1::AuditEntry> AuditRows() { return *store_->ListAudit(100, 0); }

  // Whether the coordinator sees `node` connected, within about 5 s.
  bool NodeConnectedSoon(const std::string& node, bool connected) {
    for (int i = 0; i < 500; ++i) {
      absl::StatusOr<v1::ListNodesResponse> nodes = coordinator_->ListNodes();
      if (!nodes.ok()) return false;
      for (const v1::Node& n : nodes->nodes()) {
        if (n.name() == node && n.connected() == connected) return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

  AccessLimits limits_;  // set before SetUp() to change them
  std::string dir_;
  std::string address_;  // the server's HOST:PORT
  RealClock clock_;
  std::unique_ptr<Store> store_;
  std::map<std::string, std::string> tokens_;  // user -> token
  std::unique_ptr<AccessControl> access_;
  std::unique_ptr<Coordinator> coordinator_;
  std::unique_ptr<RunReads> reads_;
  std::unique_ptr<ClientServiceImpl> client_service_;
  std::unique_ptr<AgentServiceImpl> agent_service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<v1::ClientService::Stub> client_;
  std::unique_ptr<v1::AgentService::Stub> agent_;
};

TEST_F(GrpcServicesTest, CallWithoutTokenIsUnauthenticatedAndStoresNothing) {
  grpc::ClientContext context;
  v1::SubmitRequest request;
  request.set_spec_yaml(kSpec);
  v1::SubmitResponse response;
  grpc::Status status = client_->Submit(&context, request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED)
      << status.error_message();
  EXPECT_TRUE(store_->ListRuns(v1::ListRunsRequest())->empty());
}

TEST_F(GrpcServicesTest, WrongTokenIsUnauthenticated) {
  grpc::ClientContext context;
  context.AddMetadata("authorization", "Bearer guess");
  v1::ListRunsResponse response;
  EXPECT_EQ(client_->ListRuns(&context, v1::ListRunsRequest(), &response)
                .error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
}

TEST_F(GrpcServicesTest, SubmitWithTokenQueuesAndRefusalIsInvalidArgument) {
  {
    grpc::ClientContext context;
    Authorize(&context);
    v1::SubmitRequest request;
    request.set_spec_yaml(kSpec);
    v1::SubmitResponse response;
    grpc::Status status = client_->Submit(&context, request, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(response.run_ids_size(), 1);
  }
  grpc::ClientContext context;
  Authorize(&context);
  v1::SubmitRequest request;
  request.set_spec_yaml(std::string(kSpec) + "bogus: 1\n");
  v1::SubmitResponse response;
  grpc::Status status = client_->Submit(&context, request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("bogus"), std::string::npos);
}

TEST_F(GrpcServicesTest, AgentStreamRegistersAndReceivesAssignment) {
  {
    grpc::ClientContext context;
    Authorize(&context);
    v1::SubmitRequest request;
    request.set_spec_yaml(kSpec);
    v1::SubmitResponse response;
    ASSERT_TRUE(client_->Submit(&context, request, &response).ok());
  }
  grpc::ClientContext context;
  Authorize(&context);
  auto stream = agent_->Connect(&context);
  v1::AgentMessage hello;
  hello.mutable_register_()->set_name("node-1");
  hello.mutable_register_()->set_slots(1);
  ASSERT_TRUE(stream->Write(hello));
  v1::CoordinatorMessage reply;
  ASSERT_TRUE(stream->Read(&reply));
  EXPECT_EQ(reply.registered().node(), "node-1");
  ASSERT_TRUE(stream->Read(&reply));
  EXPECT_EQ(reply.assignment().phase(), v1::Assignment::PHASE_RESERVE);
  stream->WritesDone();
  context.TryCancel();
  stream->Finish().IgnoreError();
}

TEST_F(GrpcServicesTest, ViewerReadsButCannotSubmitOrCancel) {
  EXPECT_EQ(SubmitAs("vera").error_code(), grpc::StatusCode::PERMISSION_DENIED);
  int64_t run = 0;
  ASSERT_TRUE(SubmitAs("alice", &run).ok());
  EXPECT_EQ(CancelAs("vera", run).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  grpc::ClientContext context;
  context.AddMetadata("authorization", "Bearer " + tokens_["vera"]);
  v1::ListRunsResponse runs;
  ASSERT_TRUE(client_->ListRuns(&context, v1::ListRunsRequest(), &runs).ok());
  ASSERT_EQ(runs.runs_size(), 1);
  EXPECT_EQ(runs.runs(0).user(), "alice");  // the run names its submitter
  const std::vector<v1::AuditEntry> audit = AuditRows();
  ASSERT_GE(audit.size(), 3u);
  EXPECT_EQ(audit[0].user(), "vera");  // the refused cancel, newest first
  EXPECT_FALSE(audit[0].allowed());
  EXPECT_EQ(audit[1].action(), "submit");
  EXPECT_TRUE(audit[1].allowed());
  EXPECT_EQ(audit[2].user(), "vera");
  EXPECT_FALSE(audit[2].allowed());
}

TEST_F(GrpcServicesTest, OperatorCancelsOnlyItsOwnRunsAndAdminAny) {
  int64_t alices = 0, bobs = 0;
  ASSERT_TRUE(SubmitAs("alice", &alices).ok());
  ASSERT_TRUE(SubmitAs("bob", &bobs).ok());
  grpc::Status refused = CancelAs("bob", alices);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_NE(refused.error_message().find("belongs to alice"),
            std::string::npos);
  EXPECT_TRUE(CancelAs("bob", bobs).ok());
  EXPECT_TRUE(CancelAs("root", alices).ok());
  EXPECT_EQ(reads_->GetRun(alices)->state(), v1::RUN_STATE_CANCELLED);
  const std::vector<v1::AuditEntry> audit = AuditRows();
  EXPECT_EQ(audit[0].user(), "root");
  EXPECT_EQ(audit[0].action(), "cancel");
  EXPECT_TRUE(audit[0].allowed());
  EXPECT_EQ(audit[2].user(), "bob");
  EXPECT_FALSE(audit[2].allowed());
}

TEST_F(GrpcServicesTest, AgentTokenRegistersAsItsNodeOnly) {
  grpc::ClientContext as_b;
  v1::CoordinatorMessage reply;
  grpc::Status refused =
      RegisterAs(tokens_["agent-a"], "node-b", &as_b, &reply);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_NE(refused.error_message().find("bound to node node-a"),
            std::string::npos);
  EXPECT_TRUE(coordinator_->ListNodes()->nodes().empty());
  // Nor may it act as a client.
  EXPECT_EQ(SubmitAs("agent-a").error_code(),
            grpc::StatusCode::PERMISSION_DENIED);

  grpc::ClientContext as_a;
  ASSERT_TRUE(RegisterAs(tokens_["agent-a"], "node-a", &as_a, &reply).ok());
  EXPECT_EQ(reply.registered().node(), "node-a");
  // An impostor with the name but no token changes nothing.
  grpc::ClientContext impostor;
  v1::CoordinatorMessage ignored;
  EXPECT_EQ(RegisterAs("", "node-a", &impostor, &ignored).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  v1::ListNodesResponse nodes = *coordinator_->ListNodes();
  ASSERT_EQ(nodes.nodes_size(), 1);
  EXPECT_TRUE(nodes.nodes(0).connected());
  as_a.TryCancel();
  const std::vector<v1::AuditEntry> audit = AuditRows();
  bool refused_b = false, refused_impostor = false;
  for (const v1::AuditEntry& e : audit) {
    refused_b |=
        e.action() == "register" && !e.allowed() && e.target() == "node node-b";
    refused_impostor |= e.action() == "refused" && e.user().empty();
  }
  EXPECT_TRUE(refused_b);
  EXPECT_TRUE(refused_impostor);
}

TEST_F(GrpcServicesTest, OnlyAnAdminReadsTheAuditTrail) {
  for (const std::string user : {"vera", "alice", "root"}) {
    grpc::ClientContext context;
    context.AddMetadata("authorization", "Bearer " + tokens_[user]);
    v1::ListAuditResponse response;
    grpc::Status status =
        client_->ListAudit(&context, v1::ListAuditRequest(), &response);
    EXPECT_EQ(status.ok(), user == "root") << user;
  }
}

TEST_F(GrpcServicesTest, OnlyAnAdminInvalidatesAResult) {
  int64_t run = 0;
  ASSERT_TRUE(SubmitAs("alice", &run).ok());
  for (const std::string user : {"alice", "vera"}) {
    grpc::ClientContext context;
    context.AddMetadata("authorization", "Bearer " + tokens_[user]);
    v1::InvalidateRunRequest request;
    request.set_run_id(run);
    request.set_reason("bad clock");
    v1::Run response;
    EXPECT_EQ(client_->InvalidateRun(&context, request, &response).error_code(),
              grpc::StatusCode::PERMISSION_DENIED)
        << user;
  }
  grpc::ClientContext context;
  context.AddMetadata("authorization", "Bearer " + tokens_["root"]);
  v1::InvalidateRunRequest request;
  request.set_run_id(run);
  request.set_reason("bad clock");
  v1::Run response;
  // Allowed, but the queued run has no result yet.
  EXPECT_EQ(client_->InvalidateRun(&context, request, &response).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(AuditRows()[0].action(), "invalidate");
  EXPECT_FALSE(AuditRows()[0].allowed());
}

TEST_F(GrpcServicesTest, OperatorPromotesOnlyItsOwnRunsAndOnlyAScoredOne) {
  int64_t run = 0;
  ASSERT_TRUE(SubmitAs("alice", &run).ok());
  grpc::Status refused = PromoteAs("bob", run);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_NE(refused.error_message().find("may promote only its own runs"),
            std::string::npos)
      << refused.error_message();
  EXPECT_EQ(PromoteAs("vera", run).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  // Allowed for its owner and an admin, but a queued run has no score.
  grpc::Status queued = PromoteAs("alice", run);
  EXPECT_EQ(queued.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(queued.error_message().find("a baseline must be a succeeded run"),
            std::string::npos)
      << queued.error_message();
  EXPECT_EQ(PromoteAs("root", run).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
  const std::vector<v1::AuditEntry> audit = AuditRows();
  EXPECT_EQ(audit[0].user(), "root");
  EXPECT_EQ(audit[0].action(), "promote");
  EXPECT_FALSE(audit[0].allowed());
  bool bob_refused = false;
  for (const v1::AuditEntry& e : audit) {
    bob_refused |= e.user() == "bob" && e.action() == "promote" &&
                   !e.allowed() && e.target() == absl::StrCat("run ", run);
  }
  EXPECT_TRUE(bob_refused);

  // No baseline yet: a read that any viewer may make.
  grpc::ClientContext context;
  context.AddMetadata("authorization", "Bearer " + tokens_["vera"]);
  v1::GetBaselineRequest request;
  *request.mutable_spec() = reads_->GetRun(run)->spec();
  v1::Baseline baseline;
  EXPECT_EQ(client_->GetBaseline(&context, request, &baseline).error_code(),
            grpc::StatusCode::NOT_FOUND);
}

TEST_F(GrpcServicesTest, RevokedTokenIsRefused) {
  ASSERT_TRUE(SubmitAs("alice").ok());
  const std::string id = tokens_["alice"].substr(5, 16);
  ASSERT_TRUE(store_->RevokeToken(id, 2).ok());
  EXPECT_EQ(SubmitAs("alice").error_code(), grpc::StatusCode::UNAUTHENTICATED);
}

TEST_F(GrpcServicesTest, AgentStreamAnswersEveryHeartbeatInOrder) {
  grpc::ClientContext context;
  Authorize(&context);
  auto stream = agent_->Connect(&context);
  v1::AgentMessage hello;
  hello.mutable_register_()->set_name("node-1");
  hello.mutable_register_()->set_slots(1);
  ASSERT_TRUE(stream->Write(hello));
  // Many answers queue while the agent does not read: each goes out once
  // the write before it completed, none is lost or reordered.
  v1::AgentMessage beat;
  beat.mutable_heartbeat();
  constexpr int kBeats = 200;
  for (int i = 0; i < kBeats; ++i) ASSERT_TRUE(stream->Write(beat));
  v1::CoordinatorMessage reply;
  ASSERT_TRUE(stream->Read(&reply));
  EXPECT_TRUE(reply.has_registered());
  int64_t last_ms = 0;
  for (int i = 0; i < kBeats; ++i) {
    ASSERT_TRUE(stream->Read(&reply)) << i;
    ASSERT_TRUE(reply.has_heartbeat()) << i;
    EXPECT_GE(reply.heartbeat().time_ms(), last_ms);
    last_ms = reply.heartbeat().time_ms();
  }
  context.TryCancel();
  stream->Finish().IgnoreError();
}

TEST_F(GrpcServicesTest, AgentLeavingEndsItsStreamAndDisconnectsItsNode) {
  grpc::ClientContext context;
  Authorize(&context);
  auto stream = agent_->Connect(&context);
  v1::AgentMessage hello;
  hello.mutable_register_()->set_name("node-1");
  hello.mutable_register_()->set_slots(1);
  ASSERT_TRUE(stream->Write(hello));
  v1::CoordinatorMessage reply;
  ASSERT_TRUE(stream->Read(&reply));
  ASSERT_TRUE(NodeConnectedSoon("node-1", true));
  ASSERT_TRUE(stream->WritesDone());
  // The coordinator ends its side at once (no writer waits out a poll).
  EXPECT_TRUE(stream->Finish().ok());
  EXPECT_TRUE(NodeConnectedSoon("node-1", false));
}

TEST_F(GrpcServicesTest, AnAdminTokenRegistersNoNodeButTheSharedTokenMay) {
  grpc::ClientContext as_admin;
  v1::CoordinatorMessage reply;
  grpc::Status refused =
      RegisterAs(tokens_["root"], "node-a", &as_admin, &reply);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_NE(refused.error_message().find("agent token bound to its node"),
            std::string::npos)
      << refused.error_message();
  EXPECT_TRUE(coordinator_->ListNodes()->nodes().empty());
  bool audited = false;
  for (const v1::AuditEntry& e : AuditRows()) {
    audited |=
        e.user() == "root" && !e.allowed() && e.target() == "register a node";
  }
  EXPECT_TRUE(audited);
  // --token-file's shared secret is full trust (the Slurm job's agents).
  grpc::ClientContext as_shared;
  ASSERT_TRUE(RegisterAs("s3cret", "node-a", &as_shared, &reply).ok());
  EXPECT_EQ(reply.registered().node(), "node-a");
  as_shared.TryCancel();
}

// Bytes that are no SubmitRequest (a truncated varint, an unknown wire
// type) are the caller's fault, and the answer says what is wrong.
TEST_F(GrpcServicesTest, GarbageBytesAreAnInvalidArgumentNamingTheMethod) {
  auto channel =
      grpc::CreateChannel(address_, grpc::InsecureChannelCredentials());
  grpc::GenericStub generic(channel);
  const std::string garbage = "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x0f";
  for (const char* method : {"/hpcai500.v1.ClientService/Submit",
                             "/hpcai500.v1.ClientService/ListNodes"}) {
    grpc::ClientContext context;
    context.AddMetadata("authorization", "Bearer s3cret");
    grpc::Slice slice(garbage);
    grpc::ByteBuffer request(&slice, 1);
    grpc::ByteBuffer response;
    std::promise<grpc::Status> done;
    generic.UnaryCall(&context, method, grpc::StubOptions(), &request,
                      &response,
                      [&done](grpc::Status status) { done.set_value(status); });
    const grpc::Status status = done.get_future().get();
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
        << method << ": " << status.error_message();
    EXPECT_NE(status.error_message().find(method), std::string::npos)
        << status.error_message();
    EXPECT_NE(status.error_message().find("not a valid protobuf message"),
              std::string::npos)
        << status.error_message();
  }
  // Without a token the refusal stays UNAUTHENTICATED: auth comes first.
  grpc::ClientContext anonymous;
  grpc::Slice slice(garbage);
  grpc::ByteBuffer request(&slice, 1);
  grpc::ByteBuffer response;
  std::promise<grpc::Status> done;
  generic.UnaryCall(&anonymous, "/hpcai500.v1.ClientService/ListNodes",
                    grpc::StubOptions(), &request, &response,
                    [&done](grpc::Status status) { done.set_value(status); });
  EXPECT_EQ(done.get_future().get().error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  // A handler's own error is no parse error: left as it is.
  EXPECT_EQ(SubmitAs("vera").error_code(), grpc::StatusCode::PERMISSION_DENIED);
}

// The same with at most one agent stream open.
class OneAgentStreamTest : public GrpcServicesTest {
 protected:
  OneAgentStreamTest() { limits_.max_agent_streams = 1; }
};

TEST_F(OneAgentStreamTest, SecondStreamIsRefusedUntilTheFirstEnds) {
  grpc::ClientContext first;
  v1::CoordinatorMessage reply;
  ASSERT_TRUE(RegisterAs("s3cret", "node-1", &first, &reply).ok());
  ASSERT_TRUE(reply.has_registered());
  {
    grpc::ClientContext second;
    grpc::Status refused = RegisterAs("s3cret", "node-2", &second, &reply);
    EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
        << refused.error_message();
  }
  first.TryCancel();  // the agent goes away: its stream's slot is freed
  EXPECT_TRUE(NodeConnectedSoon("node-1", false));
  grpc::Status again;
  for (int i = 0; i < 500; ++i) {
    grpc::ClientContext third;
    again = RegisterAs("s3cret", "node-2", &third, &reply);
    third.TryCancel();
    if (again.ok()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(again.ok()) << again.error_message();
}

TEST(ToGrpcStatus, KeepsCodeAndMessage) {
  grpc::Status status = ToGrpcStatus(absl::NotFoundError("no run 7"));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(status.error_message(), "no run 7");
  EXPECT_TRUE(ToGrpcStatus(absl::OkStatus()).ok());
}

}  // namespace
}  // namespace hpcai500
