// PreflightRunner: the agent's side of a pre-flight, with scripts standing
// in for `hpcai500-worker preflight`: one that answers, one that fails, one
// that hangs past the order's timeout; and the parsing of the worker's line.
#include "agent/node/preflight_runner.h"

#include <optional>
#include <string>

#include "absl/time/clock.h"
#include "agent/system/process.h"
#include "gtest/gtest.h"
#include "tests/agent/test_util.h"

namespace hpcai500::agent {
namespace {

constexpr char kLine[] =
    ":::MLLOG {\"namespace\": \"\", \"time_ms\": 1, \"event_type\": "
    "\"POINT_IN_TIME\", \"key\": \"hpcai500_preflight\", \"value\": "
    "{\"gemm_gflops\": 241.5, \"memory_gbps\": 8.5, "
    "\"allreduce_busbw_gbps\": 0.35, \"bogus\": 3, \"seconds\": 2.6}, "
    "\"metadata\": {\"seq\": 1, \"rank\": 0, \"device\": \"cpu\"}}";

TEST(PreflightRunner, ParsesTheFiguresItKnowsOfTheLastLine) {
  absl::StatusOr<v1::PreflightDone> done =
      ParsePreflightOutput(std::string("warming up\n") + kLine + "\n");
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->figures_size(), 3);
  EXPECT_DOUBLE_EQ(done->figures().at("gemm_gflops"), 241.5);
  EXPECT_DOUBLE_EQ(done->seconds(), 2.6);
  EXPECT_EQ(done->device(), "cpu");
  EXPECT_FALSE(ParsePreflightOutput("no line here\n").ok());
}

// Polls until the runner answers (at most 20 s).
std::optional<v1::AgentMessage> AwaitAnswer(PreflightRunner& runner) {
  const absl::Time give_up = absl::Now() + absl::Seconds(20);
  while (absl::Now() < give_up) {
    if (std::optional<v1::AgentMessage> answer = runner.Poll()) return answer;
    absl::SleepFor(absl::Milliseconds(20));
  }
  return std::nullopt;
}

v1::PreflightOrder Order(int64_t id, int64_t timeout_ms = 10'000) {
  v1::PreflightOrder order;
  order.set_id(id);
  order.set_precision("fp32");
  order.set_budget_ms(1'000);
  order.set_timeout_ms(timeout_ms);
  return order;
}

TEST(PreflightRunner, RunsTheWorkerAndAnswersWithItsFigures) {
  TempDir dir;
  PosixProcessLauncher launcher;
  // The script checks it was asked for the preflight mode on the CPU.
  const std::string worker = WriteScript(
      dir, "worker",
      std::string("[ \"$1 $2 $3 $4 $5 $6 $7\" = \"preflight --device cpu "
                  "--precision fp32 --budget-ms 1000\" ] || exit 9\n"
                  "echo '") +
          kLine + "'\n");
  PreflightRunner runner(worker, {}, /*cuda=*/false, dir.path(), &launcher);
  EXPECT_FALSE(runner.Poll().has_value());  // nothing ordered
  EXPECT_FALSE(runner.Start(Order(7)).has_value());
  // A second order while one runs is refused at once.
  std::optional<v1::AgentMessage> busy = runner.Start(Order(8));
  ASSERT_TRUE(busy.has_value());
  EXPECT_EQ(busy->preflight_done().id(), 8);
  EXPECT_NE(busy->preflight_done().error().find("still runs"),
            std::string::npos);
  std::optional<v1::AgentMessage> answer = AwaitAnswer(runner);
  ASSERT_TRUE(answer.has_value());
  EXPECT_EQ(answer->preflight_done().id(), 7);
  EXPECT_EQ(answer->preflight_done().error(), "");
  EXPECT_DOUBLE_EQ(answer->preflight_done().figures().at("memory_gbps"), 8.5);
  EXPECT_GT(answer->preflight_done().seconds(), 0);
}

TEST(PreflightRunner, AFailingOrHangingWorkerOrABadOrderSaysWhy) {
  TempDir dir;
  PosixProcessLauncher launcher;
  PreflightRunner failing(
      WriteScript(dir, "failing", "echo 'preflight: no GPU' >&2\nexit 2\n"), {},
      false, dir.path(), &launcher);
  EXPECT_FALSE(failing.Start(Order(1)).has_value());
  std::optional<v1::AgentMessage> failed = AwaitAnswer(failing);
  ASSERT_TRUE(failed.has_value());
  EXPECT_EQ(failed->preflight_done().error(),
            "hpcai500-worker preflight exited 2: preflight: no GPU");

  PreflightRunner hanging(WriteScript(dir, "hanging", "exec sleep 60\n"), {},
                          false, dir.path(), &launcher);
  EXPECT_FALSE(hanging.Start(Order(2, /*timeout_ms=*/1'500)).has_value());
  std::optional<v1::AgentMessage> killed = AwaitAnswer(hanging);
  ASSERT_TRUE(killed.has_value());
  EXPECT_NE(killed->preflight_done().error().find("killed after"),
            std::string::npos)
      << killed->preflight_done().error();

  v1::PreflightOrder bad = Order(3);
  bad.set_precision("fp8");
  std::optional<v1::AgentMessage> refused = hanging.Start(bad);
  ASSERT_TRUE(refused.has_value());
  EXPECT_NE(refused->preflight_done().error().find("'fp8'"), std::string::npos);
}

}  // namespace
}  // namespace hpcai500::agent
