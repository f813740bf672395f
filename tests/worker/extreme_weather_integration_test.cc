// Runs the real hpcai500-worker on the Extreme Weather workload: the
// generated ewa_smoke config trained to its mAP target on one rank, two
// ranks scoring one evaluation set together, and missing data.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "methodology/registry.h"
#include "tests/worker/test_util.h"

namespace {

using hpcai500::testing::FreePort;
using hpcai500::testing::ReadEvents;
using hpcai500::testing::ReadFile;
using hpcai500::testing::ScratchDir;
using hpcai500::testing::Subprocess;
using hpcai500::testing::SubprocessOptions;
using hpcai500::testing::WithKey;
using nlohmann::json;

using ::hpcai500::testing::kWorker;

// Starts one rank of ewa_smoke with `extra` flags, events to `events`.
std::unique_ptr<Subprocess> StartRank(const ScratchDir& dir, int rank,
                                      int world, int port,
                                      const std::vector<std::string>& extra) {
  SubprocessOptions o;
  o.argv = {kWorker,
            "--workload",
            "extreme_weather",
            "--config",
            "ewa_smoke",
            "--threads",
            world == 1 ? "2" : "1",
            "--events-file",
            dir.path() + "/rank" + std::to_string(rank) + ".events"};
  o.argv.insert(o.argv.end(), extra.begin(), extra.end());
  std::vector<std::string> env = {"PATH=/usr/bin:/bin"};
  if (world > 1) {
    env.insert(
        env.end(),
        {"RANK=" + std::to_string(rank), "WORLD_SIZE=" + std::to_string(world),
         "LOCAL_RANK=" + std::to_string(rank),
         "LOCAL_WORLD_SIZE=" + std::to_string(world), "MASTER_ADDR=127.0.0.1",
         "MASTER_PORT=" + std::to_string(port)});
  }
  o.env = env;
  o.stdout_path = dir.path() + "/rank" + std::to_string(rank) + ".out";
  o.stderr_path = dir.path() + "/rank" + std::to_string(rank) + ".err";
  return std::make_unique<Subprocess>(o);
}

TEST(ExtremeWeather, SmokeConfigGeneratesItsDataAndReachesItsTarget) {
  ScratchDir dir("ewa_smoke_target");
  const std::string data = dir.path() + "/data";
  auto rank = StartRank(dir, 0, 1, 0, {"--data", data});
  const int code = rank->Wait(std::chrono::minutes(12));
  const std::string err = ReadFile(dir.path() + "/rank0.err");
  ASSERT_EQ(code, 0) << err;

  // The year files were generated into the data folder, with the training
  // year's statistics cached beside it.
  EXPECT_TRUE(std::filesystem::exists(data + "/climo_1979.h5"));
  EXPECT_TRUE(std::filesystem::exists(data + "/climo_1980.h5"));
  EXPECT_TRUE(std::filesystem::exists(data + "/climo_1979.h5.stats"));

  const hpcai500::ConfigInfo* smoke =
      hpcai500::Registry::Builtin().FindConfig("extreme_weather", "ewa_smoke");
  ASSERT_NE(smoke, nullptr);
  const std::vector<json> events = ReadEvents(dir.path() + "/rank0.events");
  const std::vector<json> map = WithKey(events, "eval_accuracy");
  ASSERT_EQ(map.size(), static_cast<size_t>(smoke->epochs)) << err;
  EXPECT_GE(map.back()["value"].get<double>(), smoke->target)
      << "mAP@0.5 of the last epoch below the config's target";
  // mAP rises from the first epoch to the last.
  EXPECT_GT(map.back()["value"].get<double>(),
            map.front()["value"].get<double>());

  const std::vector<json> ap = WithKey(events, "hpcai500_eval_ap50");
  ASSERT_EQ(ap.size(), map.size());
  const json& last = ap.back()["value"];
  for (const char* name : {"tropical_depression", "tropical_cyclone",
                           "extratropical_cyclone", "atmospheric_river"}) {
    ASSERT_TRUE(last.contains(name)) << last.dump();
  }
  EXPECT_TRUE(WithKey(events, "eval_top5").empty());

  const std::vector<json> flops =
      WithKey(events, "hpcai500_forward_flops_per_sample");
  ASSERT_EQ(flops.size(), 1u);
  EXPECT_GT(flops[0]["value"].get<double>(), 1e8);
  const std::vector<json> stats = WithKey(events, "hpcai500_epoch_stats");
  ASSERT_EQ(stats.size(), map.size());
  EXPECT_GT(stats[0]["value"]["forward_flops"].get<double>(), 0.0);
  EXPECT_GT(stats[0]["value"]["samples"].get<int64_t>(), 0);
  EXPECT_EQ(WithKey(events, "run_stop").back()["metadata"]["status"],
            "success");
}

TEST(ExtremeWeather, TwoRanksExchangeGradientsAndScoreOneEvaluationSet) {
  ScratchDir dir("ewa_two_ranks");
  const int port = FreePort();
  ASSERT_GT(port, 0);
  const std::vector<std::string> extra = {
      "--data", dir.path() + "/data", "--epochs",
      "1",      "--steps-per-epoch",  "2"};
  auto rank0 = StartRank(dir, 0, 2, port, extra);
  auto rank1 = StartRank(dir, 1, 2, port, extra);
  ASSERT_EQ(rank0->Wait(std::chrono::minutes(8)), 0)
      << ReadFile(dir.path() + "/rank0.err");
  ASSERT_EQ(rank1->Wait(std::chrono::minutes(2)), 0)
      << ReadFile(dir.path() + "/rank1.err");
  const auto e0 = ReadEvents(dir.path() + "/rank0.events");
  const auto e1 = ReadEvents(dir.path() + "/rank1.events");
  const auto map0 = WithKey(e0, "eval_accuracy");
  const auto map1 = WithKey(e1, "eval_accuracy");
  ASSERT_EQ(map0.size(), 1u);
  ASSERT_EQ(map1.size(), 1u);
  // Both ranks gathered the same detections, so they report the same mAP.
  EXPECT_EQ(map0[0]["value"], map1[0]["value"]);
  // The detector's gradients crossed the wire on both ranks.
  for (const auto* events : {&e0, &e1}) {
    const auto stats = WithKey(*events, "hpcai500_epoch_stats");
    ASSERT_EQ(stats.size(), 1u);
    EXPECT_GT(stats[0]["value"]["comm_bytes"].get<int64_t>(), 1000000);
  }
  // Identical parameters at the end: the ranks trained one model.
  EXPECT_EQ(WithKey(e0, "hpcai500_param_checksum")[0]["value"],
            WithKey(e1, "hpcai500_param_checksum")[0]["value"]);
}

TEST(ExtremeWeather, MissingYearFileEndsTheRunNamingTheFile) {
  ScratchDir dir("ewa_missing");
  std::filesystem::create_directories(dir.path() + "/empty");
  SubprocessOptions o;
  o.argv = {kWorker,
            "--workload",
            "extreme_weather",
            "--config",
            "ewa",
            "--data",
            dir.path() + "/empty",
            "--events-file",
            dir.path() + "/rank0.events"};
  o.stdout_path = dir.path() + "/out";
  o.stderr_path = dir.path() + "/err";
  Subprocess worker(o);
  ASSERT_EQ(worker.Wait(std::chrono::minutes(1)), 1);
  const auto stop =
      WithKey(ReadEvents(dir.path() + "/rank0.events"), "run_stop");
  ASSERT_EQ(stop.size(), 1u);
  EXPECT_EQ(stop[0]["metadata"]["status"], "aborted");
  const std::string reason = stop[0]["metadata"]["reason"];
  EXPECT_NE(reason.find("climo_1979.h5"), std::string::npos) << reason;
}

}  // namespace
