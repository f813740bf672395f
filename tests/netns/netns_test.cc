// Across hosts: hpcai500d in the root namespace on a bridge's address, one
// agent in each of two network namespaces (--address and --iface its veth),
// so ranks rendezvous and train over a real link. A 2-node run completes and
// is scored; then one host's link is cut mid-run: the run gets a new attempt
// after the node timeout, the cut-off agent fences its worker by itself, and
// once the link is back the run completes on attempt 2 with no event lost or
// stored twice. The same 2-node run with `launcher: mpirun`: rank 0's agent
// starts one mpirun whose rsh agent (netns_rsh.sh) enters the other
// namespace, and each agent follows the rank on its host. And a scaling
// sweep (`hpcai500 sweep --nodes 1,2`) over the lab: one suite whose runs
// all succeed, each marked with the sweep, grouped on the scaling API.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "tests/fault/fault_cluster.h"
#include "tests/netns/netns_lab.h"

namespace hpcai500::testing {
namespace {

using std::chrono::seconds;

const char* const kNodes[NetnsLab::kHosts] = {"host-a", "host-b"};

// The lab (or a skip saying why there is none) and a cluster on it; the
// cluster's files are kept when the test failed.
class AcrossHosts : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string skip_reason, lab_error;
    lab_ = NetnsLab::Make(&skip_reason, &lab_error);
    if (lab_ == nullptr && !skip_reason.empty()) GTEST_SKIP() << skip_reason;
    ASSERT_NE(lab_, nullptr) << lab_error;
  }
  void TearDown() override {
    if (HasFailure()) cluster_.KeepFiles();
  }

  // hpcai500d on the bridge's address (not loopback, so --insecure: the
  // test uses neither tokens nor TLS) and one agent per namespace, each with
  // `agent_args` too.
  void StartCluster(const std::vector<std::string>& agent_args = {}) {
    cluster_.set_grpc_host(lab_->bridge_address());
    ASSERT_TRUE(
        cluster_.StartCoordinator({"--insecure", "--node-timeout-s", "5"}))
        << "hpcai500d did not come up on " << cluster_.grpc_address();
    for (int i = 0; i < NetnsLab::kHosts; ++i) {
      cluster_.set_agent_prefix(kNodes[i], lab_->ExecPrefix(i));
      std::vector<std::string> args = {"--address", lab_->address(i), "--iface",
                                       lab_->iface(i)};
      args.insert(args.end(), agent_args.begin(), agent_args.end());
      ASSERT_TRUE(cluster_.StartAgent(kNodes[i], 1, args))
          << kNodes[i] << " did not connect from " << lab_->ns(i);
    }
  }

  // Submits a run over both hosts (`extra_yaml` appended to its spec).
  // Returns its id ("" when submit failed).
  std::string SubmitTwoNodeRun(const std::string& name,
                               const std::string& extra_yaml = "") {
    return cluster_.SubmitRun(name, /*seed=*/1, /*nodes=*/2, extra_yaml);
  }

  // Which host holds `rank` in `attempt` (-1 when none has its pid file).
  int HostOfRank(const std::string& run_id, int attempt, int rank) {
    for (int i = 0; i < NetnsLab::kHosts; ++i) {
      if (cluster_.WorkerPid(kNodes[i], run_id, attempt, rank) > 0) return i;
    }
    return -1;
  }

  // Events of `attempt` the workers wrote (or, when acked_only, had
  // acknowledged) that the store lacks, over both ranks.
  int64_t Lost(const std::string& run_id, int attempt, bool acked_only) {
    int64_t lost = 0;
    for (int rank = 0; rank < NetnsLab::kHosts; ++rank) {
      const int host = HostOfRank(run_id, attempt, rank);
      if (host < 0) {
        ADD_FAILURE() << "no host ran rank " << rank << " of attempt "
                      << attempt;
        continue;
      }
      lost +=
          cluster_.LostEvents(kNodes[host], run_id, attempt, rank, acked_only);
    }
    return lost;
  }

  // Waits for `run_id` to end, then checks what a run that met no fault
  // shows: succeeded on its first attempt over both hosts, `epochs` epochs,
  // scored once, every event both ranks wrote stored once. Prints the
  // summary line for `fault` and returns the run as `show` gives it.
  nlohmann::json ExpectSucceededOnBothHosts(const std::string& run_id,
                                            size_t epochs,
                                            const std::string& fault) {
    const std::string state = cluster_.WaitForEnd(run_id, seconds(300));
    EXPECT_EQ(state, "RUN_STATE_SUCCEEDED");
    const nlohmann::json run = cluster_.ShowRun(run_id);
    if (!run.is_object() || run["attempts"].size() != 1) {
      ADD_FAILURE() << "expected one attempt: " << run.dump();
      return run;
    }
    EXPECT_EQ(run["attempts"][0]["nodes"].size(), 2u) << run.dump();
    EXPECT_EQ(run["epochs"].size(), epochs) << run.dump();
    EXPECT_TRUE(run["score"].is_object()) << run.dump();
    EXPECT_EQ(cluster_.CountResults(run_id), 1);
    EXPECT_TRUE(
        WaitFor([&] { return Lost(run_id, 1, false) == 0; }, seconds(30)));
    const StoredEventCounts stored = cluster_.CountStoredEvents(run_id);
    EXPECT_GT(stored.distinct, 20);
    const int64_t twice = stored.rows - stored.distinct;
    PrintFaultSummary(fault,
                      "run " + state + ", result stored " +
                          std::to_string(cluster_.CountResults(run_id)) + "x",
                      Lost(run_id, 1, false), twice);
    EXPECT_EQ(twice, 0);
    return run;
  }

  // Declared before the cluster: the namespaces outlive its processes.
  std::unique_ptr<NetnsLab> lab_;
  FaultCluster cluster_;
};

TEST_F(AcrossHosts, TwoNodeRunBetweenNamespacesIsScored) {
  StartCluster();
  if (HasFatalFailure()) return;
  const std::string run_id = SubmitTwoNodeRun("across-hosts");
  ASSERT_FALSE(run_id.empty());
  ExpectSucceededOnBothHosts(
      run_id, /*epochs=*/2,
      "none (2 nodes in 2 network namespaces over a bridge)");
}

TEST_F(AcrossHosts, SweepOverNodesIsOneSuiteWhoseRunsAllSucceed) {
  StartCluster();
  if (HasFatalFailure()) return;
  const std::string spec = cluster_.WriteSpec(
      "sweep",
      "name: lab-sweep\nworkload: image_classification\n"
      "config: fashion_mnist_smoke\nlevel: system\nnodes: 1\n"
      "ranks_per_node: 1\ndevice: cpu\nbatch_size: 64\nprecision: fp32\n"
      "seed: 1\nsystem: netns-lab\nepochs: 1\n");
  const CommandResult sweep =
      cluster_.Cli({"sweep", spec, "--nodes", "1,2", "--scaling", "strong"});
  ASSERT_EQ(sweep.exit_code, 0) << sweep.out << sweep.err;
  // One suite of two: the sweep's id names it.
  const std::string prefix = "sweep ";
  ASSERT_EQ(sweep.err.rfind(prefix, 0), 0u) << sweep.err;
  const std::string sweep_id =
      sweep.err.substr(prefix.size(), sweep.err.find(':') - prefix.size());
  EXPECT_NE(sweep.err.find("suite " + sweep_id + ": 2 submissions, 2 runs"),
            std::string::npos)
      << sweep.err;
  std::vector<std::string> run_ids;
  for (size_t at = 0, end;
       (end = sweep.out.find('\n', at)) != std::string::npos; at = end + 1) {
    run_ids.push_back(sweep.out.substr(at, end - at));
  }
  ASSERT_EQ(run_ids.size(), 2u) << sweep.out;

  for (size_t i = 0; i < run_ids.size(); ++i) {
    const int nodes = static_cast<int>(i) + 1;
    EXPECT_EQ(cluster_.WaitForEnd(run_ids[i], seconds(300)),
              "RUN_STATE_SUCCEEDED")
        << "run " << run_ids[i];
    const nlohmann::json run = cluster_.ShowRun(run_ids[i]);
    ASSERT_TRUE(run.is_object()) << run_ids[i];
    const nlohmann::json& point = run["spec"];
    EXPECT_EQ(point["sweep"], sweep_id) << run.dump();
    EXPECT_EQ(point["scaling"], "strong") << run.dump();
    EXPECT_EQ(point["nodes"], nodes) << run.dump();
    // Strong scaling: the global batch of 64 divided over the ranks.
    EXPECT_EQ(point["batch_size"], 64 / nodes) << run.dump();
    EXPECT_EQ(run["attempts"].back()["nodes"].size(),
              static_cast<size_t>(nodes))
        << run.dump();
    EXPECT_TRUE(run["score"].is_object()) << run.dump();
  }

  // The scaling API groups the sweep's runs as one configuration.
  int status = 0;
  const std::string body = cluster_.HttpGet(
      "/api/v1/scaling?system=netns-lab&workload=image_classification&sweep=" +
          sweep_id,
      &status);
  ASSERT_EQ(status, 200) << body;
  const nlohmann::json scaling = nlohmann::json::parse(body);
  ASSERT_EQ(scaling["configurations"].size(), 1u) << body;
  const nlohmann::json& points = scaling["configurations"][0]["points"];
  ASSERT_EQ(points.size(), 2u) << body;
  EXPECT_EQ(points[0]["devices"], 1);
  EXPECT_EQ(points[1]["devices"], 2);
  EXPECT_GT(points[1]["valid_flops"].get<double>(), 0) << body;
}

TEST_F(AcrossHosts, TwoNodeMpirunRunBetweenNamespacesIsScored) {
  if (::access("/usr/bin/mpirun", X_OK) != 0) {
    GTEST_SKIP() << "no /usr/bin/mpirun (Debian's openmpi-bin)";
  }
  // mpirun's daemons call home over the bridge's subnet, not loopback (the
  // agents pass OMPI_MCA_* on to mpirun).
  const std::string& bridge = lab_->bridge_address();
  const std::string subnet = bridge.substr(0, bridge.rfind('.')) + ".0/24";
  ::setenv("OMPI_MCA_oob_tcp_if_include", subnet.c_str(), 1);
  StartCluster({"--mpirun-rsh-agent", NETNS_RSH});
  ::unsetenv("OMPI_MCA_oob_tcp_if_include");
  if (HasFatalFailure()) return;
  const std::string run_id =
      SubmitTwoNodeRun("across-hosts-mpirun", "launcher: mpirun\nepochs: 1\n");
  ASSERT_FALSE(run_id.empty());
  const nlohmann::json run = ExpectSucceededOnBothHosts(
      run_id, /*epochs=*/1, "none (launcher mpirun over 2 network namespaces)");
  EXPECT_EQ(run["spec"].value("launcher", ""), "mpirun") << run.dump();
  // Each agent found the rank mpirun started on its host (its pid file),
  // and both ranks' run_stop is stored, once.
  EXPECT_GE(HostOfRank(run_id, 1, 0), 0);
  EXPECT_GE(HostOfRank(run_id, 1, 1), 0);
  EXPECT_EQ(cluster_.CountStoredKey(run_id, 1, "run_stop"), 2);
}

TEST_F(AcrossHosts, LinkCutMidRunGivesANewAttemptAndTheCutAgentFences) {
  StartCluster();
  if (HasFatalFailure()) return;
  const std::string run_id = SubmitTwoNodeRun("link-cut");
  ASSERT_FALSE(run_id.empty());
  ASSERT_TRUE(WaitFor(
      // Both ranks train: each has begun its first epoch.
      [&] { return cluster_.CountStoredKey(run_id, 1, "epoch_start") >= 2; },
      seconds(120)));
  // Cut the host of rank 1 (not the rendezvous host).
  const int cut = HostOfRank(run_id, 1, 1);
  ASSERT_GE(cut, 0);
  const pid_t worker = cluster_.WorkerPid(kNodes[cut], run_id, 1, 1);
  ASSERT_GT(worker, 0);
  ASSERT_TRUE(ProcessAlive(worker));
  // What the agents had had acknowledged when the link went: all of it must
  // be stored. (What the cut host writes afterwards belongs to an attempt
  // that is fenced by the time it can be sent: acknowledged and dropped.)
  int64_t acked_at_cut[NetnsLab::kHosts];
  for (int rank = 0; rank < NetnsLab::kHosts; ++rank) {
    const int host = HostOfRank(run_id, 1, rank);
    ASSERT_GE(host, 0);
    acked_at_cut[rank] = cluster_.AckedSeq(kNodes[host], run_id, 1, rank);
  }
  const auto cut_at = std::chrono::steady_clock::now();
  ASSERT_TRUE(lab_->SetLink(cut, /*up=*/false));

  // The coordinator gives up on the host after the node timeout and requeues
  // the run (its attempt 2 waits for two nodes), and the host's agent,
  // hearing nothing, stops its worker by itself.
  ASSERT_TRUE(WaitFor(
      [&] {
        const nlohmann::json run = cluster_.ShowRun(run_id);
        return run.is_object() && !run["attempts"].empty() &&
               run["attempts"][0].value("state", "") == "requeued";
      },
      seconds(60)));
  const auto requeued_s = std::chrono::duration_cast<seconds>(
                              std::chrono::steady_clock::now() - cut_at)
                              .count();
  EXPECT_TRUE(WaitFor([&] { return !ProcessAlive(worker); }, seconds(30)))
      << "the cut-off agent left its worker " << worker << " running";
  const bool fenced_while_cut = !ProcessAlive(worker);
  const int64_t stored_before = cluster_.CountStoredEvents(run_id, 1).rows;

  ASSERT_TRUE(lab_->SetLink(cut, /*up=*/true));
  const std::string state = cluster_.WaitForEnd(run_id, seconds(300));
  EXPECT_EQ(state, "RUN_STATE_SUCCEEDED");
  const nlohmann::json run = cluster_.ShowRun(run_id);
  ASSERT_EQ(run["attempts"].size(), 2u) << run.dump();
  EXPECT_EQ(run["attempts"][0]["state"], "requeued") << run.dump();
  EXPECT_EQ(run["attempts"][1]["nodes"].size(), 2u) << run.dump();
  EXPECT_EQ(cluster_.CountResults(run_id), 1);
  const int64_t stale_stored =
      cluster_.CountStoredEvents(run_id, 1).rows - stored_before;
  EXPECT_EQ(stale_stored, 0) << "events of the fenced attempt were stored";

  // Attempt 1: what was acknowledged before the cut; attempt 2: everything.
  ASSERT_TRUE(
      WaitFor([&] { return Lost(run_id, 2, false) == 0; }, seconds(30)));
  int64_t lost = Lost(run_id, 2, /*acked_only=*/false);
  for (int rank = 0; rank < NetnsLab::kHosts; ++rank) {
    lost += cluster_.MissingUpTo(run_id, 1, rank, acked_at_cut[rank]);
  }
  EXPECT_GT(acked_at_cut[0] + acked_at_cut[1], 0);
  const StoredEventCounts stored = cluster_.CountStoredEvents(run_id);
  EXPECT_GT(stored.distinct, 20);
  const int64_t twice = stored.rows - stored.distinct;
  PrintFaultSummary(
      std::string("link of ") + kNodes[cut] + " cut mid-run (namespaces)",
      "requeued " + std::to_string(requeued_s) + " s after the cut, worker " +
          (fenced_while_cut ? "fenced by its cut-off agent" : "left running") +
          ", run " + state + " on attempt 2, result stored " +
          std::to_string(cluster_.CountResults(run_id)) + "x",
      lost, twice);
  EXPECT_EQ(lost, 0);
  EXPECT_EQ(twice, 0);
}

}  // namespace
}  // namespace hpcai500::testing
