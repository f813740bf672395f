// Tests of node health's pure parts (server/coordinator/node_health.h).
#include "server/coordinator/node_health.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "server/coordinator/coordinator.h"
#include "tests/common/fake_clock.h"
#include "tests/server/coordinator/test_events.h"

namespace hpcai500 {
namespace {

using testing::Event;

TEST(NodeHealth, InventoryClassIsGpusElseCpus) {
  v1::Inventory gpus;
  gpus.set_cpu_model("AMD EPYC");
  gpus.add_devices()->set_model("NVIDIA H100");
  gpus.add_devices()->set_model("NVIDIA H100");
  EXPECT_EQ(InventoryClass(gpus), "NVIDIA H100 x2");
  v1::Inventory cpus;
  cpus.set_cpu_model("AMD EPYC 7763");
  cpus.set_cpu_cores(64);
  EXPECT_EQ(InventoryClass(cpus), "AMD EPYC 7763 (64 cores)");
  EXPECT_EQ(InventoryClass(v1::Inventory()), "");
}

// hpcai500_epoch_stats with the time split.
EventLine Stats(int rank, int64_t seq, int epoch, int64_t samples,
                double compute, double input, double comm) {
  return Event("hpcai500_epoch_stats",
               absl::StrCat("{\"samples\": ", samples,
                            ", \"seconds\": 10, \"compute_seconds\": ", compute,
                            ", \"input_wait_seconds\": ", input,
                            ", \"comm_wait_seconds\": ", comm, "}"),
               rank, seq, epoch);
}

TEST(NodeHealth, RankTimeIsOwnTimePerSampleWithoutWaitingForPeers) {
  const std::vector<RankEpochTime> times = RankTimes(
      {Stats(0, 1, 1, 100, 9.0, 1.0, 6.0), Stats(1, 1, 1, 100, 9.0, 0.5, 0.5),
       Stats(0, 2, 2, 0, 1.0, 0.0, 0.0),  // no samples: left out
       Event("run_stop", "null", 0, 3)});
  ASSERT_EQ(times.size(), 2u);
  EXPECT_EQ(times[0].rank, 0);
  EXPECT_DOUBLE_EQ(times[0].seconds_per_sample, 0.04);  // (9 + 1 - 6) / 100
  EXPECT_DOUBLE_EQ(times[1].seconds_per_sample, 0.09);
}

v1::PreflightResult Result(const std::string& node, double gemm,
                           double memory) {
  v1::PreflightResult r;
  r.set_node(node);
  (*r.mutable_figures())["gemm_gflops"] = gemm;
  (*r.mutable_figures())["memory_gbps"] = memory;
  return r;
}

TEST(NodeHealth, PreflightFlaggedAgainstItsClassNamesTheFigure) {
  const v1::PreflightResult judged = JudgePreflight(
      Result("c", 25, 10.1),
      /*history=*/{}, {Result("a", 100, 10), Result("b", 98, 10.2)},
      OutlierRule{});
  EXPECT_TRUE(judged.flagged());
  EXPECT_EQ(judged.evidence(),
            "gemm_gflops 25 GFLOP/s: -74% (z -10.0) against the median 98 "
            "GFLOP/s of 3 pre-flights of its class");
}

TEST(NodeHealth, PreflightFlaggedAgainstItsOwnHistory) {
  const v1::PreflightResult judged = JudgePreflight(
      Result("a", 100, 4),
      {Result("a", 101, 10), Result("a", 99, 10.2), Result("a", 100, 9.9)},
      /*peers=*/{}, OutlierRule{});
  EXPECT_TRUE(judged.flagged());
  EXPECT_NE(judged.evidence().find("memory_gbps 4 GB/s"), std::string::npos);
  EXPECT_NE(judged.evidence().find("of 3 earlier pre-flights of its own"),
            std::string::npos);
}

TEST(NodeHealth, HealthyOrFailedOrLonePreflightIsNotFlagged) {
  EXPECT_FALSE(JudgePreflight(Result("a", 97, 10), {},
                              {Result("b", 100, 10), Result("c", 99, 10)},
                              OutlierRule{})
                   .flagged());
  v1::PreflightResult failed = Result("a", 1, 1);
  failed.set_error("killed after 20 s (its timeout)");
  EXPECT_FALSE(JudgePreflight(failed, {},
                              {Result("b", 100, 10), Result("c", 99, 10)},
                              OutlierRule{})
                   .flagged());
  // Nothing to compare with: one peer is too few.
  EXPECT_FALSE(JudgePreflight(Result("a", 1, 1), {}, {Result("b", 100, 10)},
                              OutlierRule{})
                   .flagged());
}

// An agent's channel that keeps the pre-flight orders it got; the test
// thread reads them while a Preflight call waits on another.
class OrderTaker final : public AgentChannel {
 public:
  void Send(const v1::CoordinatorMessage& message) override {
    absl::MutexLock lock(&mu_);
    if (message.has_preflight()) orders_.push_back(message.preflight());
  }
  // Waits up to 10 s for the first order; its id (0: none came).
  int64_t AwaitOrder() {
    absl::MutexLock lock(&mu_);
    auto some = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return !orders_.empty();
    };
    mu_.AwaitWithTimeout(absl::Condition(&some), absl::Seconds(10));
    return orders_.empty() ? 0 : orders_.front().id();
  }

 private:
  absl::Mutex mu_;
  std::vector<v1::PreflightOrder> orders_ ABSL_GUARDED_BY(mu_);
};

class NodeHealthCoordinatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/hpcai500_node_health_test_XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    store_ = *Store::Open(dir_ + "/c.db");
    CoordinatorOptions options;
    options.node_health.drain_on_flag = true;
    options.node_health.preflight_timeout_ms = 2'000;
    options.node_health.preflight_budget_ms = 1'000;
    coordinator_ = *Coordinator::Create(store_.get(), &clock_,
                                        &Registry::Builtin(), options);
  }
  void TearDown() override {
    coordinator_.reset();
    store_.reset();
    for (const char* suffix : {"", "-wal", "-shm"}) {
      std::remove((dir_ + "/c.db" + suffix).c_str());
    }
    rmdir(dir_.c_str());
  }
  int64_t Register(const std::string& name, OrderTaker* agent) {
    v1::Register request;
    request.set_name(name);
    request.set_address(name + ".local");
    request.set_slots(1);
    request.set_cpus(2);
    request.mutable_inventory()->set_cpu_model("Test CPU");
    request.mutable_inventory()->set_cpu_cores(2);
    return *coordinator_->Connect(request, agent);
  }
  void Answer(int64_t session, int64_t id, double gemm) {
    v1::AgentMessage message;
    v1::PreflightDone& done = *message.mutable_preflight_done();
    done.set_id(id);
    done.set_device("cpu");
    (*done.mutable_figures())["gemm_gflops"] = gemm;
    (*done.mutable_figures())["memory_gbps"] = 10;
    done.set_seconds(3.5);
    ASSERT_TRUE(coordinator_->HandleAgentMessage(session, message).ok());
  }
  v1::Node NodeNamed(const std::string& name) {
    const absl::StatusOr<v1::ListNodesResponse> nodes =
        coordinator_->ListNodes();
    if (!nodes.ok()) return v1::Node();
    for (const v1::Node& node : nodes->nodes()) {
      if (node.name() == name) return node;
    }
    return v1::Node();
  }

  std::string dir_;
  testing::FakeClock clock_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<Coordinator> coordinator_;
};

TEST_F(NodeHealthCoordinatorTest, SlowNodeIsFlaggedDrainedAndResumed) {
  OrderTaker a, b, c;
  const int64_t sa = Register("a", &a), sb = Register("b", &b),
                sc = Register("c", &c);
  absl::StatusOr<v1::PreflightResponse> response;
  std::thread ask([&] { response = coordinator_->Preflight({}); });
  Answer(sa, a.AwaitOrder(), 100);
  Answer(sb, b.AwaitOrder(), 98);
  Answer(sc, c.AwaitOrder(), 25);
  ask.join();
  ASSERT_TRUE(response.ok()) << response.status();
  ASSERT_EQ(response->results_size(), 3);
  EXPECT_FALSE(response->results(0).flagged());
  EXPECT_FALSE(response->results(1).flagged());
  EXPECT_TRUE(response->results(2).flagged());
  EXPECT_TRUE(response->results(2).drained());
  EXPECT_EQ(response->results(2).inventory_class(), "Test CPU (2 cores)");

  v1::Node slow = NodeNamed("c");
  EXPECT_EQ(slow.state(), "drained");
  EXPECT_EQ(
      slow.state_reason().rfind("flagged by preflight: gemm_gflops 25", 0), 0u)
      << slow.state_reason();
  EXPECT_EQ(slow.incidents(), 1);
  EXPECT_EQ(slow.last_preflight().figures().at("gemm_gflops"), 25);
  EXPECT_TRUE(NodeNamed("a").flag().empty());
  absl::StatusOr<v1::NodeHealthResponse> health =
      coordinator_->NodeHealthOf("c", 10);
  ASSERT_TRUE(health.ok());
  EXPECT_EQ(health->preflights_size(), 1);
  ASSERT_EQ(health->incidents_size(), 1);
  EXPECT_EQ(health->incidents(0).kind(), "preflight");

  ASSERT_TRUE(coordinator_->ResumeNode("c").ok());
  EXPECT_TRUE(NodeNamed("c").flag().empty());
  EXPECT_EQ(NodeNamed("c").state(), "idle");
}

TEST_F(NodeHealthCoordinatorTest, SilentNodeGetsAnErrorAfterTheTimeout) {
  OrderTaker a;
  Register("a", &a);
  v1::PreflightRequest request;
  request.add_nodes("a");
  absl::StatusOr<v1::PreflightResponse> response =
      coordinator_->Preflight(request);  // nobody answers: 2 s + 5 s
  ASSERT_TRUE(response.ok()) << response.status();
  ASSERT_EQ(response->results_size(), 1);
  EXPECT_EQ(response->results(0).error(), "no answer within 7 s");
  EXPECT_FALSE(response->results(0).flagged());
  request.set_nodes(0, "nobody");
  EXPECT_EQ(coordinator_->Preflight(request).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace hpcai500
