#include "worker/events/reporter.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace hpcai500::worker {
namespace {

// An EventLog writing to a fresh file, and that file's keys in order.
class ReporterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::string(::testing::TempDir()) + "/reporter_test_" +
           std::to_string(::getpid());
    std::filesystem::remove_all(dir_);
    std::string error;
    log_ = EventLog::Open(
        dir_ + "/rank0.mllog", /*rank=*/0, /*echo=*/nullptr,
        [] { return int64_t{7}; }, &error);
    ASSERT_NE(log_, nullptr) << error;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Text() {
    log_.reset();
    std::ifstream in(dir_ + "/rank0.mllog");
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

  static std::vector<std::string> Keys(const std::string& text) {
    std::vector<std::string> keys;
    std::regex re("\"key\": \"([a-z0-9_]+)\"");
    for (auto it = std::sregex_iterator(text.begin(), text.end(), re);
         it != std::sregex_iterator(); ++it) {
      keys.push_back((*it)[1]);
    }
    return keys;
  }

  std::string dir_;
  std::unique_ptr<EventLog> log_;
};

TEST_F(ReporterTest, AnEpochIsReportedInTheOrderMlperfExpects) {
  RunReporter reporter(log_.get());
  EpochStats stats;
  stats.samples = 100;
  stats.seconds = 2;
  EvalResult result;
  result.quality = 0.5;
  result.top5 = 0.75;
  reporter.EpochStart(3);
  reporter.EpochStop(3, stats);
  reporter.EvalStart(3);
  reporter.EvalStop(3, /*eval_seconds=*/1.5, result);
  const std::string text = Text();
  EXPECT_EQ(Keys(text), (std::vector<std::string>{
                            "block_start", "epoch_start", "epoch_stop",
                            "hpcai500_epoch_stats", "eval_start", "eval_stop",
                            "eval_accuracy", "eval_top5", "block_stop"}));
  EXPECT_NE(text.find("\"throughput\": 50.0"), std::string::npos) << text;
  EXPECT_NE(text.find("\"eval_seconds\": 1.5"), std::string::npos) << text;
  EXPECT_EQ(text.find("energy_joules"), std::string::npos) << text;
}

TEST_F(ReporterTest, DetectionReportsPerClassApInsteadOfTop5) {
  RunReporter reporter(log_.get());
  EvalResult result;
  result.quality = 0.4;
  result.class_ap = {{"tropical_cyclone", 0.5}, {"atmospheric_river", NAN}};
  reporter.EvalStop(1, 0.0, result);
  const std::string text = Text();
  EXPECT_EQ(text.find("eval_top5"), std::string::npos) << text;
  EXPECT_NE(text.find("\"value\": {\"tropical_cyclone\": 0.5, "
                      "\"atmospheric_river\": null}"),
            std::string::npos)
      << text;
}

TEST_F(ReporterTest, ForwardFlopsPerSampleIsWrittenOnce) {
  RunReporter reporter(log_.get());
  reporter.ForwardFlopsPerSample(10.0);
  reporter.ForwardFlopsPerSample(20.0);
  EXPECT_EQ(Keys(Text()),
            std::vector<std::string>{"hpcai500_forward_flops_per_sample"});
}

// Point() and ReportAbort() name their caller's line; the lines a
// RunReporter method writes itself name the reporter.
TEST_F(ReporterTest, LinesNameTheSourceLineThatLoggedThem) {
  RunReporter reporter(log_.get());
  const int point_line = __LINE__ + 1;
  reporter.Point("seed", JsonInt(42));
  reporter.RunSuccess();
  const int abort_line = __LINE__ + 1;
  ReportAbort(log_.get(), /*rank=*/0, "peer gone");
  const std::string text = Text();
  const std::string self = "\"file\": \"tests/worker/events/reporter_test.cc\"";
  EXPECT_NE(text.find(self + ", \"lineno\": " + std::to_string(point_line)),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(self + ", \"lineno\": " + std::to_string(abort_line)),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\"file\": \"worker/events/reporter.cc\""),
            std::string::npos)
      << text;
}

TEST_F(ReporterTest, AbortWritesRunStopWithTheReason) {
  ReportAbort(log_.get(), /*rank=*/0, "peer gone");
  const std::string text = Text();
  EXPECT_EQ(Keys(text), std::vector<std::string>{"run_stop"});
  EXPECT_NE(text.find("\"status\": \"aborted\", \"reason\": \"peer gone\""),
            std::string::npos)
      << text;
}

}  // namespace
}  // namespace hpcai500::worker
