#include "server/grpc_services.h"

#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>

#include "gtest/gtest.h"

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
    client_service_ = std::make_unique<ClientServiceImpl>(coordinator_.get());
    agent_service_ = std::make_unique<AgentServiceImpl>(coordinator_.get());
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &port);
    builder.SetMaxReceiveMessageSize(kMaxReceiveMessageBytes);
    builder.RegisterService(client_service_.get());
    builder.RegisterService(agent_service_.get());
    std::vector<
        std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>>
        interceptors;
    interceptors.push_back(std::make_unique<AuthInterceptorFactory>("s3cret"));
    builder.experimental().SetInterceptorCreators(std::move(interceptors));
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(port),
                                       grpc::InsecureChannelCredentials());
    client_ = v1::ClientService::NewStub(channel);
    agent_ = v1::AgentService::NewStub(channel);
  }
  void TearDown() override {
    coordinator_->Shutdown();
    server_->Shutdown(std::chrono::system_clock::now() +
                      std::chrono::seconds(1));
    server_.reset();
    coordinator_.reset();
    store_.reset();
    for (const char* suffix : {"", "-wal", "-shm"}) {
      std::remove((dir_ + "/g.db" + suffix).c_str());
    }
    rmdir(dir_.c_str());
  }

  static void Authorize(grpc::ClientContext* context) {
    context->AddMetadata("authorization", "Bearer s3cret");
  }

  std::string dir_;
  RealClock clock_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<Coordinator> coordinator_;
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

TEST(ToGrpcStatus, KeepsCodeAndMessage) {
  grpc::Status status = ToGrpcStatus(absl::NotFoundError("no run 7"));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(status.error_message(), "no run 7");
  EXPECT_TRUE(ToGrpcStatus(absl::OkStatus()).ok());
}

}  // namespace
}  // namespace hpcai500
