#include "server/http/router.h"

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "server/http/run_scaling.h"
#include "tests/server/http/fake_coordinator_view.h"

namespace hpcai500 {
namespace {

namespace fs = std::filesystem;
namespace http = boost::beast::http;

void WriteFile(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary);
  out << text;
  ASSERT_TRUE(out.good()) << path;
}

HttpRequest Request(http::verb method, std::string target) {
  HttpRequest request(method, target, 11);
  request.set(http::field::host, "localhost");
  return request;
}

HttpRequest Get(std::string target) {
  return Request(http::verb::get, std::move(target));
}

nlohmann::json BodyJson(const HttpResponse& response) {
  return nlohmann::json::parse(response.body());
}

std::string ContentType(const HttpResponse& response) {
  return std::string(response[http::field::content_type]);
}

// A web folder with the page's three files, next to a secret file outside
// it that no request may reach.
class HttpRouterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ =
        fs::path(::testing::TempDir()) /
        ("http_router_" +
         std::string(
             ::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(root_);
    web_ = root_ / "web";
    WriteFile(web_ / "index.html", "<title>page</title>");
    WriteFile(web_ / "app.js", "export const x = 1;");
    WriteFile(web_ / "style.css", "body {}");
    WriteFile(web_ / "sub" / "data.json", "{}");
    WriteFile(root_ / "secret.txt", "TOP-SECRET");
    fs::create_symlink(root_ / "secret.txt", web_ / "link.txt");
    router_ = std::make_unique<HttpRouter>(&view_, web_.string());
  }
  void TearDown() override { fs::remove_all(root_); }

  fs::path root_;
  fs::path web_;
  FakeCoordinatorView view_;
  std::unique_ptr<HttpRouter> router_;
};

TEST_F(HttpRouterTest, LeaderboardPassesFiltersAndReturnsRowsAsJson) {
  v1::LeaderboardResponse board;
  v1::LeaderboardRow* row = board.add_rows();
  row->set_rank(1);
  row->set_submission_id(7);
  row->set_system("local-cpu");
  row->set_valid_flops(1.25e12);
  row->add_run_ids(7);
  view_.SetLeaderboard(board);

  HttpResponse response = router_->Handle(
      Get("/api/v1/leaderboard?workload=image_classification&config=fashion_"
          "mnist"));

  EXPECT_EQ(response.result(), http::status::ok);
  EXPECT_EQ(ContentType(response), "application/json");
  EXPECT_EQ(view_.last_leaderboard_request().workload(),
            "image_classification");
  EXPECT_EQ(view_.last_leaderboard_request().config(), "fashion_mnist");
  nlohmann::json json = BodyJson(response);
  ASSERT_EQ(json["rows"].size(), 1u);
  // Proto field names, and primitives printed even when default.
  EXPECT_EQ(json["rows"][0]["system"], "local-cpu");
  EXPECT_EQ(json["rows"][0]["submission_id"], "7");
  EXPECT_EQ(json["rows"][0]["valid_flops"], 1.25e12);
  EXPECT_EQ(json["rows"][0]["ranked"], false);
  EXPECT_EQ(json["rows"][0]["run_ids"][0], "7");
}

TEST_F(HttpRouterTest, LeaderboardWithoutFiltersAsksForAll) {
  HttpResponse response = router_->Handle(Get("/api/v1/leaderboard"));
  EXPECT_EQ(response.result(), http::status::ok);
  EXPECT_EQ(view_.last_leaderboard_request().workload(), "");
  EXPECT_TRUE(BodyJson(response).contains("rows"));
}

TEST_F(HttpRouterTest, LeaderboardPassesLevelRankedAndOrder) {
  HttpResponse response = router_->Handle(
      Get("/api/v1/leaderboard?level=hardware&ranked=ranked&sort=flops&"
          "order=asc&limit=25&offset=50"));
  EXPECT_EQ(response.result(), http::status::ok) << response.body();
  const v1::LeaderboardRequest request = view_.last_leaderboard_request();
  EXPECT_EQ(request.level(), "hardware");
  EXPECT_EQ(request.ranked(), "ranked");
  EXPECT_EQ(request.sort(), "flops");
  EXPECT_TRUE(request.ascending());
  EXPECT_EQ(request.limit(), 25);
  EXPECT_EQ(request.offset(), 50);
  router_->Handle(Get("/api/v1/leaderboard?sort=flops&order=desc"));
  EXPECT_FALSE(view_.last_leaderboard_request().ascending());
}

TEST_F(HttpRouterTest, LeaderboardOfOneSubmission) {
  HttpResponse response =
      router_->Handle(Get("/api/v1/leaderboard?submission=7"));
  EXPECT_EQ(response.result(), http::status::ok) << response.body();
  EXPECT_EQ(view_.last_leaderboard_request().submission_id(), 7);
  response = router_->Handle(Get("/api/v1/leaderboard?submission=x"));
  EXPECT_EQ(response.result(), http::status::bad_request);
  EXPECT_NE(BodyJson(response)["error"].get<std::string>().find("'submission'"),
            std::string::npos)
      << response.body();
}

TEST_F(HttpRouterTest, LeaderboardOrderOtherThanAscOrDescIs400) {
  HttpResponse response =
      router_->Handle(Get("/api/v1/leaderboard?sort=flops&order=up"));
  EXPECT_EQ(response.result(), http::status::bad_request);
  EXPECT_NE(BodyJson(response)["error"].get<std::string>().find("'order'"),
            std::string::npos)
      << response.body();
}

TEST_F(HttpRouterTest, RunRanksAreServedAsJson) {
  view_.AddRun(SampleRun(5));
  HttpResponse response = router_->Handle(Get("/api/v1/runs/5/ranks"));
  ASSERT_EQ(response.result(), http::status::ok) << response.body();
  nlohmann::json json = BodyJson(response);
  EXPECT_EQ(json["target"], 0.7);
  ASSERT_EQ(json["epochs"].size(), 1u);
  EXPECT_EQ(json["epochs"][0]["rank"], 1);
  EXPECT_EQ(json["epochs"][0]["throughput"], 123.5);
  EXPECT_EQ(router_->Handle(Get("/api/v1/runs/6/ranks")).result(),
            http::status::not_found);
}

TEST_F(HttpRouterTest, RankLogsAreTextAttachments) {
  view_.AddRun(SampleRun(5));
  HttpResponse events =
      router_->Handle(Get("/api/v1/runs/5/attempts/2/ranks/3/events"));
  ASSERT_EQ(events.result(), http::status::ok) << events.body();
  EXPECT_EQ(ContentType(events), "text/plain; charset=utf-8");
  EXPECT_EQ(events.body(), "events of 5/2/3\n");
  EXPECT_EQ(std::string(events[http::field::content_disposition]),
            "attachment; filename=\"run-5-attempt-2-rank-3-events.txt\"");
  HttpResponse stderr_text =
      router_->Handle(Get("/api/v1/runs/5/attempts/1/ranks/0/stderr"));
  EXPECT_EQ(stderr_text.body(), "stderr of 5/1/0\n");
}

TEST_F(HttpRouterTest, BadRankLogPathsAreRefusedNamingWhy) {
  view_.AddRun(SampleRun(5));
  EXPECT_EQ(
      router_->Handle(Get("/api/v1/runs/5/attempts/9/ranks/0/events")).result(),
      http::status::not_found);
  EXPECT_EQ(
      router_->Handle(Get("/api/v1/runs/5/attempts/0/ranks/0/events")).result(),
      http::status::bad_request);
  EXPECT_EQ(
      router_->Handle(Get("/api/v1/runs/5/attempts/1/ranks/x/events")).result(),
      http::status::bad_request);
  EXPECT_EQ(
      router_->Handle(Get("/api/v1/runs/5/attempts/1/ranks/0/core")).result(),
      http::status::not_found);
  EXPECT_EQ(
      router_->Handle(Get("/api/v1/runs/7/attempts/1/ranks/0/events")).result(),
      http::status::not_found);
}

TEST_F(HttpRouterTest, RankLogsNeedTheSameTokenAsTheRun) {
  view_.AddRun(SampleRun(5));
  view_.RequireToken("viewer-secret");
  EXPECT_EQ(
      router_->Handle(Get("/api/v1/runs/5/attempts/1/ranks/0/events")).result(),
      http::status::unauthorized);
  HttpRequest with = Get("/api/v1/runs/5/attempts/1/ranks/0/events");
  with.set(http::field::authorization, "Bearer viewer-secret");
  EXPECT_EQ(router_->Handle(with).result(), http::status::ok);
}

TEST_F(HttpRouterTest, QueryValuesArePercentDecoded) {
  router_->Handle(Get("/api/v1/leaderboard?workload=image%5Fclassification"));
  EXPECT_EQ(view_.last_leaderboard_request().workload(),
            "image_classification");
}

TEST_F(HttpRouterTest, InvalidArgumentFromTheViewIs400WithJsonError) {
  HttpResponse response =
      router_->Handle(Get("/api/v1/leaderboard?workload=no_such_workload"));
  EXPECT_EQ(response.result(), http::status::bad_request);
  EXPECT_EQ(ContentType(response), "application/json");
  EXPECT_EQ(BodyJson(response)["error"], "unknown workload 'no_such_workload'");
}

TEST_F(HttpRouterTest, UnknownQueryParameterIs400NamingIt) {
  HttpResponse response =
      router_->Handle(Get("/api/v1/leaderboard?wrokload=x"));
  EXPECT_EQ(response.result(), http::status::bad_request);
  std::string error = BodyJson(response)["error"];
  EXPECT_NE(error.find("'wrokload'"), std::string::npos) << error;
}

TEST_F(HttpRouterTest, RepeatedQueryParameterIs400) {
  HttpResponse response =
      router_->Handle(Get("/api/v1/leaderboard?workload=a&workload=b"));
  EXPECT_EQ(response.result(), http::status::bad_request);
}

TEST_F(HttpRouterTest, RunByIdHasSpecStateEpochsAndScoreInputs) {
  view_.AddRun(SampleRun(42));
  HttpResponse response = router_->Handle(Get("/api/v1/runs/42"));
  ASSERT_EQ(response.result(), http::status::ok);
  nlohmann::json run = BodyJson(response);
  EXPECT_EQ(run["id"], "42");
  EXPECT_EQ(run["state"], "RUN_STATE_SUCCEEDED");
  EXPECT_EQ(run["spec"]["config"], "fashion_mnist_smoke");
  EXPECT_EQ(run["spec"]["ranks_per_node"], 2);
  EXPECT_EQ(run["epochs"][0]["throughput"], 2400);
  EXPECT_EQ(run["score"]["exponent"], 5);
  EXPECT_EQ(run["score"]["target"], 0.8);
  EXPECT_EQ(run["score"]["reached_target"], true);
}

TEST_F(HttpRouterTest, UnknownRunIs404WithJsonError) {
  HttpResponse response = router_->Handle(Get("/api/v1/runs/9"));
  EXPECT_EQ(response.result(), http::status::not_found);
  EXPECT_EQ(BodyJson(response)["error"], "no run 9");
}

TEST_F(HttpRouterTest, NonNumericRunIdIs400) {
  for (const char* id :
       {"abc", "-1", "0", "1x", "%31a", "99999999999999999999"}) {
    HttpResponse response =
        router_->Handle(Get(std::string("/api/v1/runs/") + id));
    EXPECT_EQ(response.result(), http::status::bad_request) << id;
    EXPECT_TRUE(BodyJson(response).contains("error")) << id;
  }
}

TEST_F(HttpRouterTest, RunsListHonoursLimitAndDefaultsTo100) {
  view_.AddRun(SampleRun(1));
  view_.AddRun(SampleRun(2));
  view_.AddRun(SampleRun(3));

  HttpResponse limited = router_->Handle(Get("/api/v1/runs?limit=2"));
  ASSERT_EQ(limited.result(), http::status::ok);
  EXPECT_EQ(view_.last_limit(), 2);
  nlohmann::json json = BodyJson(limited);
  ASSERT_EQ(json["runs"].size(), 2u);
  EXPECT_EQ(json["runs"][0]["id"], "3");

  router_->Handle(Get("/api/v1/runs"));
  EXPECT_EQ(view_.last_limit(), 100);
}

TEST_F(HttpRouterTest, HistoryServesEachRunsValuesWithTheLearnedBand) {
  // Eight nightly runs of Valid FLOPS 1e12 +- 2%, the seventh at 0.6e12;
  // one unscored and one invalidated run are not history.
  const std::vector<double> nightly = {1.00e12, 1.02e12, 0.98e12, 1.01e12,
                                       0.99e12, 1.00e12, 0.60e12, 1.01e12};
  for (size_t i = 0; i < nightly.size(); ++i) {
    v1::Run run = SampleRun(static_cast<int64_t>(i) + 1);
    run.set_finished_ms(1700000000000 + static_cast<int64_t>(i));
    run.mutable_score()->set_valid_flops(nightly[i]);
    view_.AddRun(run);
  }
  v1::Run unscored = SampleRun(20);
  unscored.clear_score();
  view_.AddRun(unscored);
  v1::Run invalidated = SampleRun(21);
  invalidated.set_invalidated_by("admin");
  view_.AddRun(invalidated);

  HttpResponse response =
      router_->Handle(Get("/api/v1/history?name=fmnist-smoke"));
  ASSERT_EQ(response.result(), http::status::ok) << response.body();
  EXPECT_EQ(view_.last_list_request().name(), "fmnist-smoke");
  EXPECT_EQ(view_.last_list_request().limit(), 1000);
  nlohmann::json json = BodyJson(response);
  EXPECT_EQ(json["name"], "fmnist-smoke");
  EXPECT_EQ(json["band"]["window"], 10);
  EXPECT_EQ(json["band"]["min_history"], 5);
  const nlohmann::json& runs = json["runs"];
  ASSERT_EQ(runs.size(), nightly.size()) << json.dump();
  EXPECT_EQ(runs[0]["id"], 1) << "oldest first";
  EXPECT_EQ(runs[7]["finished_ms"], 1700000000007);
  for (int i = 0; i < 5; ++i) {
    EXPECT_TRUE(runs[i]["metrics"]["valid_flops"]["low"].is_null()) << i;
  }
  const nlohmann::json& dropped = runs[6]["metrics"]["valid_flops"];
  EXPECT_EQ(dropped["value"], 0.60e12);
  EXPECT_EQ(dropped["regression"], true);
  EXPECT_LT(dropped["low"].get<double>(), 0.98e12);
  EXPECT_GT(dropped["high"].get<double>(), 1.02e12);
  EXPECT_EQ(runs[7]["metrics"]["valid_flops"]["regression"], false);
  // Throughput (samples / training seconds) and quality come along.
  EXPECT_EQ(runs[0]["metrics"]["quality"]["value"], 0.81);
  EXPECT_TRUE(runs[0]["metrics"].contains("throughput"));
}

// A scored run of `system` at nodes x 1 rank with `valid_flops`, in the
// configuration `precision` / `compression` of sweep `sweep`.
v1::Run ScalingRun(int64_t id, const std::string& system, int nodes,
                   const std::string& precision, const std::string& compression,
                   const std::string& sweep, double valid_flops) {
  v1::Run run = SampleRun(id);
  v1::RunSpec& spec = *run.mutable_spec();
  spec.set_system(system);
  spec.set_nodes(nodes);
  spec.set_ranks_per_node(1);
  spec.set_precision(precision);
  spec.set_compression(compression);
  spec.set_sweep(sweep);
  spec.set_scaling(sweep.empty() ? "" : "weak");
  run.mutable_score()->set_valid_flops(valid_flops);
  return run;
}

TEST_F(HttpRouterTest, ScalingIsPerConfigurationNeverAveragedAcrossThem) {
  view_.AddRun(ScalingRun(1, "alpha", 1, "fp32", "none", "s1", 1e12));
  view_.AddRun(ScalingRun(2, "alpha", 2, "fp32", "none", "s1", 1.8e12));
  view_.AddRun(ScalingRun(3, "alpha", 1, "bf16", "none", "s1", 2e12));
  view_.AddRun(ScalingRun(4, "alpha", 2, "bf16", "none", "s1", 4e12));
  // A repetition in a later sweep: averaged with run 2, its configuration's.
  view_.AddRun(ScalingRun(5, "alpha", 2, "fp32", "none", "s2", 1.6e12));
  view_.AddRun(ScalingRun(6, "beta", 1, "fp32", "none", "", 9e12));
  // The same configuration with a fast path on: a series of its own.
  v1::Run fused = ScalingRun(8, "alpha", 1, "bf16", "none", "s1", 3e12);
  fused.mutable_spec()->set_fused_bn(true);
  view_.AddRun(fused);
  v1::Run failed = ScalingRun(7, "alpha", 4, "fp32", "none", "s2", 0);
  failed.set_state(v1::RUN_STATE_FAILED);
  view_.AddRun(failed);

  HttpResponse response = router_->Handle(
      Get("/api/v1/scaling?system=alpha&workload=image_classification"));
  ASSERT_EQ(response.result(), http::status::ok) << response.body();
  EXPECT_EQ(view_.last_list_request().state(), v1::RUN_STATE_SUCCEEDED);
  EXPECT_EQ(view_.last_list_request().workload(), "image_classification");
  nlohmann::json json = BodyJson(response);
  // Newest first by their newest run: s1 holds run 8.
  EXPECT_EQ(json["sweeps"], nlohmann::json::parse(R"(["s1", "s2"])"));
  const nlohmann::json& configurations = json["configurations"];
  ASSERT_EQ(configurations.size(), 3u) << json.dump();
  EXPECT_EQ(configurations[0]["precision"], "bf16");
  EXPECT_EQ(configurations[0]["scaling"], "weak");
  EXPECT_EQ(configurations[0]["fast_paths"], "");
  const nlohmann::json& bf16 = configurations[0]["points"];
  ASSERT_EQ(bf16.size(), 2u);
  EXPECT_EQ(bf16[1]["devices"], 2);
  EXPECT_DOUBLE_EQ(bf16[1]["efficiency"].get<double>(), 1.0);
  EXPECT_EQ(configurations[1]["fast_paths"], "fused_bn");
  ASSERT_EQ(configurations[1]["points"].size(), 1u);
  EXPECT_DOUBLE_EQ(configurations[1]["points"][0]["valid_flops"].get<double>(),
                   3e12);
  const nlohmann::json& fp32 = configurations[2]["points"];
  ASSERT_EQ(fp32.size(), 2u) << "the failed run at 4 devices is left out";
  EXPECT_EQ(fp32[1]["runs"], 2);
  EXPECT_DOUBLE_EQ(fp32[1]["valid_flops"].get<double>(), 1.7e12);
  EXPECT_DOUBLE_EQ(fp32[1]["efficiency"].get<double>(), 0.85);

  // One sweep chosen: its runs only.
  json = BodyJson(router_->Handle(
      Get("/api/v1/scaling?system=alpha&workload=image_classification&"
          "sweep=s2")));
  ASSERT_EQ(json["configurations"].size(), 1u) << json.dump();
  EXPECT_DOUBLE_EQ(
      json["configurations"][0]["points"][0]["valid_flops"].get<double>(),
      1.6e12);
  EXPECT_EQ(json["sweeps"].size(), 2u) << "every sweep stays choosable";

  for (const char* target :
       {"/api/v1/scaling", "/api/v1/scaling?system=alpha",
        "/api/v1/scaling?system=alpha&workload=w&nodes=2"}) {
    EXPECT_EQ(router_->Handle(Get(target)).result(), http::status::bad_request)
        << target;
  }
}

TEST(RunScalingJson, SplitsEachRanksEpochTimeAtEachSize) {
  std::vector<v1::Run> runs = {
      ScalingRun(1, "alpha", 2, "fp32", "none", "s", 1e12)};
  v1::RunRanksResponse ranks;
  for (int rank = 0; rank < 2; ++rank) {
    v1::RankEpoch& row = *ranks.add_epochs();
    row.set_rank(rank);
    row.set_epoch(1);
    row.set_compute_seconds(rank == 0 ? 2.0 : 4.0);
    row.set_input_wait_seconds(0.5);
    row.set_comm_wait_seconds(rank == 0 ? 1.0 : 0.0);
  }
  const nlohmann::json json = nlohmann::json::parse(
      RunScalingJson("alpha", "image_classification", "", runs, {{1, ranks}}));
  const nlohmann::json& point = json["configurations"][0]["points"][0];
  EXPECT_DOUBLE_EQ(point["compute_seconds"].get<double>(), 3.0);
  EXPECT_DOUBLE_EQ(point["input_seconds"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(point["comm_seconds"].get<double>(), 0.5);
  // Without the ranks' rows: zeros, not a made-up split.
  const nlohmann::json bare = nlohmann::json::parse(
      RunScalingJson("alpha", "image_classification", "", runs, {}));
  EXPECT_EQ(bare["configurations"][0]["points"][0]["comm_seconds"], 0.0);
}

TEST_F(HttpRouterTest, IndexesListSystemsWithScoredRunsAndEverySeries) {
  view_.AddRun(ScalingRun(1, "alpha", 1, "fp32", "none", "", 1e12));
  view_.AddRun(ScalingRun(2, "alpha", 2, "fp32", "none", "", 2e12));
  v1::Run beta = ScalingRun(3, "beta", 1, "fp32", "none", "", 0);
  beta.clear_score();
  beta.set_state(v1::RUN_STATE_FAILED);
  beta.mutable_spec()->set_name("beta-nightly");
  view_.AddRun(beta);

  nlohmann::json systems =
      BodyJson(router_->Handle(Get("/api/v1/index/systems")));
  ASSERT_EQ(systems["systems"].size(), 1u) << "beta has no scored run";
  EXPECT_EQ(systems["systems"][0]["system"], "alpha");
  EXPECT_EQ(systems["systems"][0]["workload"], "image_classification");
  EXPECT_EQ(systems["systems"][0]["runs"], 2);
  EXPECT_EQ(systems["systems"][0]["last_run_id"], 2);

  nlohmann::json series =
      BodyJson(router_->Handle(Get("/api/v1/index/series")));
  ASSERT_EQ(series["series"].size(), 2u);
  EXPECT_EQ(series["series"][0]["name"], "beta-nightly");
  EXPECT_EQ(series["series"][0]["runs"], 1);
  EXPECT_EQ(series["series"][0]["scored"], 0);
  EXPECT_EQ(series["series"][0]["last_state"], "failed");
  EXPECT_EQ(series["series"][1]["name"], "fmnist-smoke");
  EXPECT_EQ(series["series"][1]["runs"], 2);
  EXPECT_EQ(series["series"][1]["last_run_id"], 2);
  EXPECT_EQ(router_->Handle(Get("/api/v1/index/series?x=1")).result(),
            http::status::bad_request);
}

TEST_F(HttpRouterTest, HistoryWithoutANameIs400) {
  for (const char* target :
       {"/api/v1/history", "/api/v1/history?name=", "/api/v1/history?x=1"}) {
    HttpResponse response = router_->Handle(Get(target));
    EXPECT_EQ(response.result(), http::status::bad_request) << target;
    EXPECT_TRUE(BodyJson(response).contains("error")) << target;
  }
}

TEST_F(HttpRouterTest, BadLimitIs400) {
  for (const char* limit : {"x", "0", "-3", "1000000", ""}) {
    HttpResponse response =
        router_->Handle(Get(std::string("/api/v1/runs?limit=") + limit));
    EXPECT_EQ(response.result(), http::status::bad_request) << limit;
  }
}

TEST_F(HttpRouterTest, RunsListPassesItsFiltersOn) {
  HttpResponse response = router_->Handle(
      Get("/api/v1/runs?name=nightly%20cpu&workload=image_classification"
          "&config=fashion_mnist_smoke&state=running&limit=5&before=40"));
  ASSERT_EQ(response.result(), http::status::ok);
  v1::ListRunsRequest request = view_.last_list_request();
  EXPECT_EQ(request.name(), "nightly cpu");
  EXPECT_EQ(request.workload(), "image_classification");
  EXPECT_EQ(request.config(), "fashion_mnist_smoke");
  EXPECT_EQ(request.state(), v1::RUN_STATE_RUNNING);
  EXPECT_EQ(request.limit(), 5);
  EXPECT_EQ(request.before_id(), 40);

  router_->Handle(Get("/api/v1/runs?state=cancelled"));
  EXPECT_EQ(view_.last_list_request().state(), v1::RUN_STATE_CANCELLED);
  EXPECT_EQ(view_.last_list_request().before_id(), 0);

  router_->Handle(Get("/api/v1/runs?submission=12"));
  EXPECT_EQ(view_.last_list_request().submission_id(), 12);
  EXPECT_EQ(router_->Handle(Get("/api/v1/runs?submission=0")).result(),
            http::status::bad_request);
}

TEST_F(HttpRouterTest, BadRunsFilterIs400NamingTheParameter) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"state=done", "'state'"},
      {"state=RUNNING", "'state'"},
      {"state=unspecified", "'state'"},
      {"state=3", "'state'"},
      {"before=-4", "'before'"},
      {"before=0", "'before'"},
      {"before=x", "'before'"},
      {"owner=me", "unknown query parameter 'owner'"},
      {"name=a&name=b", "'name' given twice"},
  };
  for (const auto& [query, message] : cases) {
    HttpResponse response = router_->Handle(Get("/api/v1/runs?" + query));
    EXPECT_EQ(response.result(), http::status::bad_request) << query;
    const std::string error = BodyJson(response)["error"].get<std::string>();
    EXPECT_NE(error.find(message), std::string::npos) << query << ": " << error;
  }
}

TEST_F(HttpRouterTest, OtherViewErrorsAre500) {
  view_.FailListRuns(absl::InternalError("database is locked"));
  HttpResponse response = router_->Handle(Get("/api/v1/runs"));
  EXPECT_EQ(response.result(), http::status::internal_server_error);
  EXPECT_EQ(BodyJson(response)["error"], "database is locked");
}

TEST_F(HttpRouterTest, NodesAreListed) {
  v1::ListNodesResponse nodes;
  v1::Node* node = nodes.add_nodes();
  node->set_name("node-a");
  node->set_slots(2);
  node->set_connected(true);
  (*node->mutable_labels())["rack"] = "r1";
  view_.SetNodes(nodes);
  HttpResponse response = router_->Handle(Get("/api/v1/nodes"));
  ASSERT_EQ(response.result(), http::status::ok);
  nlohmann::json json = BodyJson(response);
  EXPECT_EQ(json["nodes"][0]["name"], "node-a");
  EXPECT_EQ(json["nodes"][0]["used_slots"], 0);
  EXPECT_EQ(json["nodes"][0]["labels"]["rack"], "r1");
}

TEST_F(HttpRouterTest, UnknownApiRouteIs404WithJsonError) {
  for (const char* target : {"/api/v1/nope", "/api/v1/runs/", "/api/v1/"}) {
    HttpResponse response = router_->Handle(Get(target));
    EXPECT_EQ(response.result(), http::status::not_found) << target;
    EXPECT_EQ(ContentType(response), "application/json") << target;
    EXPECT_TRUE(BodyJson(response).contains("error")) << target;
  }
}

TEST_F(HttpRouterTest, MetricsAreServedAsPrometheusText) {
  HttpResponse response = router_->Handle(Get("/metrics"));
  EXPECT_EQ(response.result(), http::status::ok);
  EXPECT_EQ(ContentType(response), "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(response.body().substr(0, view_.MetricsText().size()),
            view_.MetricsText())
      << "the coordinator's metrics, then the HTTP front end's own";
}

TEST_F(HttpRouterTest, RootServesIndexHtml) {
  HttpResponse response = router_->Handle(Get("/"));
  EXPECT_EQ(response.result(), http::status::ok);
  EXPECT_EQ(ContentType(response), "text/html; charset=utf-8");
  EXPECT_EQ(response.body(), "<title>page</title>");
}

TEST_F(HttpRouterTest, StaticFilesHaveTheirContentTypes) {
  HttpResponse js = router_->Handle(Get("/app.js"));
  EXPECT_EQ(js.result(), http::status::ok);
  EXPECT_EQ(ContentType(js), "text/javascript; charset=utf-8");
  EXPECT_EQ(js.body(), "export const x = 1;");
  HttpResponse css = router_->Handle(Get("/style.css?v=2"));
  EXPECT_EQ(css.result(), http::status::ok);
  EXPECT_EQ(ContentType(css), "text/css; charset=utf-8");
  HttpResponse json = router_->Handle(Get("/sub/data.json"));
  EXPECT_EQ(json.result(), http::status::ok);
  EXPECT_EQ(ContentType(json), "application/json");
}

TEST_F(HttpRouterTest, MissingFileAndDirectoryAre404) {
  EXPECT_EQ(router_->Handle(Get("/nope.html")).result(),
            http::status::not_found);
  EXPECT_EQ(router_->Handle(Get("/sub")).result(), http::status::not_found);
  EXPECT_EQ(router_->Handle(Get("/sub/")).result(), http::status::not_found);
}

TEST_F(HttpRouterTest, PathsLeavingTheWebFolderAreRefused) {
  for (const char* target :
       {"/../secret.txt", "/sub/../../secret.txt", "/%2e%2e/secret.txt",
        "/%2E%2E%2Fsecret.txt", "/sub/%2e%2e/%2e%2e/secret.txt",
        "/..%5csecret.txt", "//etc/passwd", "/link.txt",
        "/%2F..%2Fsecret.txt"}) {
    HttpResponse response = router_->Handle(Get(target));
    EXPECT_EQ(response.result(), http::status::not_found) << target;
    EXPECT_EQ(response.body().find("TOP-SECRET"), std::string::npos) << target;
  }
}

TEST_F(HttpRouterTest, TheTestsNodeModulesAreNotServed) {
  WriteFile(web_ / "node_modules" / "pkg" / "index.js", "x");
  EXPECT_EQ(router_->Handle(Get("/node_modules/pkg/index.js")).result(),
            http::status::not_found);
  EXPECT_EQ(router_->Handle(Get("/sub/../node_modules/pkg/index.js")).result(),
            http::status::not_found);
}

TEST_F(HttpRouterTest, MalformedEscapeIs400) {
  EXPECT_EQ(router_->Handle(Get("/app%2")).result(), http::status::bad_request);
  EXPECT_EQ(router_->Handle(Get("/app%zz.js")).result(),
            http::status::bad_request);
  EXPECT_EQ(router_->Handle(Get("/app.js%00.html")).result(),
            http::status::bad_request);
}

TEST_F(HttpRouterTest, MissingWebFolderServesApiButNoFiles) {
  HttpRouter router(&view_, (root_ / "no_such_dir").string());
  EXPECT_EQ(router.Handle(Get("/")).result(), http::status::not_found);
  EXPECT_EQ(router.Handle(Get("/api/v1/nodes")).result(), http::status::ok);
}

TEST_F(HttpRouterTest, OtherMethodsAre405) {
  for (http::verb method :
       {http::verb::post, http::verb::put, http::verb::delete_}) {
    HttpResponse response = router_->Handle(Request(method, "/api/v1/runs"));
    EXPECT_EQ(response.result(), http::status::method_not_allowed);
    EXPECT_EQ(response[http::field::allow], "GET, HEAD");
  }
}

TEST_F(HttpRouterTest, HeadSendsGetsHeadersWithoutBody) {
  HttpResponse get = router_->Handle(Get("/app.js"));
  HttpResponse head = router_->Handle(Request(http::verb::head, "/app.js"));
  EXPECT_EQ(head.result(), http::status::ok);
  EXPECT_TRUE(head.body().empty());
  EXPECT_EQ(head[http::field::content_length],
            std::to_string(get.body().size()));
  EXPECT_EQ(ContentType(head), ContentType(get));
}

TEST_F(HttpRouterTest, KeepAliveFollowsTheRequest) {
  HttpRequest close = Get("/");
  close.keep_alive(false);
  EXPECT_FALSE(router_->Handle(close).keep_alive());
  EXPECT_TRUE(router_->Handle(Get("/")).keep_alive());
}

TEST_F(HttpRouterTest, MetricsHaveARequestLatencyHistogramPerRoute) {
  view_.AddRun(SampleRun(5));
  router_->Handle(Get("/api/v1/runs/5"));
  router_->Handle(Get("/api/v1/runs/5"));
  router_->Handle(Request(http::verb::head, "/api/v1/runs/5/ranks"));
  router_->Handle(Get("/app.js"));
  const std::string text = router_->Handle(Get("/metrics")).body();
  EXPECT_NE(text.find("# TYPE hpcai500_http_request_duration_seconds "
                      "histogram\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("hpcai500_http_request_duration_seconds_count{route=\"/"
                      "api/v1/runs/:id\",method=\"GET\"} 2\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("hpcai500_http_request_duration_seconds_bucket{route=\"/"
                      "api/v1/runs/:id/ranks\",method=\"HEAD\",le=\"+Inf\"} "
                      "1\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("route=\"page\",method=\"GET\""), std::string::npos);
  EXPECT_EQ(text.find("route=\"/healthz\""), std::string::npos);
  router_->Handle(Get(std::string(kHealthPath)));
  EXPECT_NE(router_->Handle(Get("/metrics"))
                .body()
                .find("hpcai500_http_request_duration_seconds_count{route=\"/"
                      "healthz\",method=\"GET\"} 1\n"),
            std::string::npos)
      << "probes are counted apart from the page's files";
  // Methods a client invents are refused and share one series.
  for (const char* invented : {"BREW", "WHEN", "POST"}) {
    HttpRequest odd = Get("/api/v1/runs/5");
    odd.method_string(invented);
    EXPECT_EQ(router_->Handle(odd).result(), http::status::method_not_allowed);
  }
  const std::string after = router_->Handle(Get("/metrics")).body();
  EXPECT_NE(after.find("hpcai500_http_request_duration_seconds_count{route=\"/"
                       "api/v1/runs/:id\",method=\"other\"} 3\n"),
            std::string::npos)
      << after;
  EXPECT_EQ(after.find("BREW"), std::string::npos) << after;
  EXPECT_EQ(text.find("/api/v1/runs/5"), std::string::npos)
      << "raw paths never become labels";
}

TEST(RouteLabel, NamesRoutesByPattern) {
  EXPECT_EQ(RouteLabel("/api/v1/leaderboard"), "/api/v1/leaderboard");
  EXPECT_EQ(RouteLabel("/api/v1/runs"), "/api/v1/runs");
  EXPECT_EQ(RouteLabel("/api/v1/history"), "/api/v1/history");
  EXPECT_EQ(RouteLabel("/api/v1/scaling"), "/api/v1/scaling");
  EXPECT_EQ(RouteLabel("/api/v1/index/series"), "/api/v1/index/series");
  EXPECT_EQ(RouteLabel("/api/v1/index/nope"), "/api/v1/unknown");
  EXPECT_EQ(RouteLabel("/api/v1/runs/17"), "/api/v1/runs/:id");
  EXPECT_EQ(RouteLabel("/api/v1/runs/17/ranks"), "/api/v1/runs/:id/ranks");
  EXPECT_EQ(RouteLabel("/api/v1/runs/17/attempts/2/ranks/3/stderr"),
            "/api/v1/runs/:id/attempts/:n/ranks/:r/stderr");
  EXPECT_EQ(RouteLabel("/api/v1/runs/x"), "/api/v1/unknown");
  EXPECT_EQ(RouteLabel("/api/v1/whatever/1"), "/api/v1/unknown");
  EXPECT_EQ(RouteLabel("/metrics"), "/metrics");
  EXPECT_EQ(RouteLabel("/style.css"), "page");
}

TEST(HttpRouter, ServesTheRepositoryLeaderboardPage) {
  FakeCoordinatorView view;
  HttpRouter router(&view, std::string(HPCAI500_SOURCE_DIR) + "/web");
  HttpResponse page = router.Handle(Get("/"));
  ASSERT_EQ(page.result(), http::status::ok);
  EXPECT_NE(page.body().find("<title>hpcai500 leaderboard</title>"),
            std::string::npos);
  EXPECT_EQ(router.Handle(Get("/app.js")).result(), http::status::ok);
  EXPECT_EQ(router.Handle(Get("/style.css")).result(), http::status::ok);
}

TEST(PercentDecode, DecodesEscapesAndOptionallyPlus) {
  EXPECT_EQ(*PercentDecode("a%20b+c", /*plus_is_space=*/true), "a b c");
  EXPECT_EQ(*PercentDecode("a%2Fb+c", /*plus_is_space=*/false), "a/b+c");
  EXPECT_FALSE(PercentDecode("%", /*plus_is_space=*/false).ok());
  EXPECT_FALSE(PercentDecode("%4", /*plus_is_space=*/false).ok());
  EXPECT_FALSE(PercentDecode("%g0", /*plus_is_space=*/false).ok());
  EXPECT_FALSE(PercentDecode("%00", /*plus_is_space=*/false).ok());
}

TEST(HttpStatusFor, MapsStatusCodes) {
  EXPECT_EQ(HttpStatusFor(absl::InvalidArgumentError("x")),
            http::status::bad_request);
  EXPECT_EQ(HttpStatusFor(absl::NotFoundError("x")), http::status::not_found);
  EXPECT_EQ(HttpStatusFor(absl::UnavailableError("x")),
            http::status::internal_server_error);
}

TEST_F(HttpRouterTest, WithoutAViewerTokenReadsAreRefused) {
  view_.RequireToken("hai5_view");
  HttpResponse api = router_->Handle(Get("/api/v1/runs"));
  EXPECT_EQ(api.result(), http::status::unauthorized);
  EXPECT_EQ(ContentType(api), "application/json");
  EXPECT_NE(api.body().find("viewer token"), std::string::npos);
  HttpResponse page = router_->Handle(Get("/"));
  EXPECT_EQ(page.result(), http::status::unauthorized);
  EXPECT_NE(page.body().find("hpcai500_token"), std::string::npos);  // sign in
  EXPECT_EQ(page.body().find("<title>page</title>"), std::string::npos);

  HttpRequest bearer = Get("/api/v1/runs");
  bearer.set(http::field::authorization, "Bearer hai5_view");
  EXPECT_EQ(router_->Handle(bearer).result(), http::status::ok);
  HttpRequest cookie = Get("/");
  cookie.set(http::field::cookie, "theme=dark; hpcai500_token=hai5_view");
  HttpResponse signed_in = router_->Handle(cookie);
  EXPECT_EQ(signed_in.result(), http::status::ok);
  EXPECT_EQ(view_.last_bearer(), "hai5_view");
}

TEST_F(HttpRouterTest, HealthSaysTheStoreFailsWhileLivenessStaysOk) {
  view_.RequireToken("hai5_view");
  view_.SetHealth(absl::UnavailableError(
      "store failing since 2026-12-05T01:00:00Z: database is full"));
  HttpResponse health = router_->Handle(Get(std::string(kHealthPath)));
  EXPECT_EQ(health.result(), http::status::service_unavailable);
  EXPECT_EQ(health.body(),
            "store failing since 2026-12-05T01:00:00Z: database is full\n");
  // Liveness: up is up; a restart would not bring the disk space back.
  HttpResponse live = router_->Handle(Get(std::string(kLivePath)));
  EXPECT_EQ(live.result(), http::status::ok);
  EXPECT_EQ(live.body(), "ok\n");
  view_.SetHealth(absl::OkStatus());
  EXPECT_EQ(router_->Handle(Get(std::string(kHealthPath))).result(),
            http::status::ok);
  EXPECT_EQ(router_->Handle(Get("/livez?x=1")).result(),
            http::status::unauthorized);
}

TEST_F(HttpRouterTest, HealthProbeAnswersWithoutAToken) {
  view_.RequireToken("hai5_view");
  HttpResponse health = router_->Handle(Get(std::string(kHealthPath)));
  EXPECT_EQ(health.result(), http::status::ok);
  EXPECT_EQ(health.body(), "ok\n");
  EXPECT_EQ(router_->Handle(Request(http::verb::head, "/healthz")).result(),
            http::status::ok);
  // Only the exact target: nothing else slips past the token.
  EXPECT_EQ(router_->Handle(Get("/healthz?x=1")).result(),
            http::status::unauthorized);
  EXPECT_EQ(router_->Handle(Get("/healthz/../api/v1/runs")).result(),
            http::status::unauthorized);
  EXPECT_EQ(router_->Handle(Request(http::verb::post, "/healthz")).result(),
            http::status::method_not_allowed);
}

}  // namespace
}  // namespace hpcai500
