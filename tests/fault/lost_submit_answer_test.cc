// A submit whose answer is lost is not stored twice: a TCP proxy between the
// real CLI and hpcai500d forwards the first submit but closes both sides
// once its run is stored, before the answer reaches the CLI ("Socket
// closed"). The CLI sends it again with the same request id and prints the
// one stored run; a second invocation with that id (a CI job's retry) gets
// the same run.
//
// A submit across a coordinator restart: hpcai500d down when the CLI
// starts, or killed after storing a submit and before its answer passed,
// then back after a few seconds (up to 10). The CLI's retries reach the
// restarted coordinator (cli/client/coordinator_client.h: a short reconnect
// back-off) and the run is stored once.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>

#include "tests/fault/answer_dropping_proxy.h"
#include "tests/fault/fault_cluster.h"

namespace hpcai500::testing {
namespace {

using std::chrono::seconds;

// `text` up to its first newline.
std::string FirstLine(const std::string& text) {
  return text.substr(0, text.find('\n'));
}

// The request id the CLI named when it sent the submit again ("sending
// request ID again"); "" when it did not.
std::string RetriedRequestId(const std::string& err) {
  constexpr char kMarker[] = "sending request ";
  const size_t at = err.find(kMarker);
  if (at == std::string::npos) return "";
  const size_t start = at + sizeof(kMarker) - 1;
  return err.substr(start, err.find(' ', start) - start);
}

TEST(LostSubmitAnswer, RetriedSubmitStoresOneRunAndPrintsIt) {
  FaultCluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator());
  const std::string address = cluster.grpc_address();
  const int upstream = std::stoi(address.substr(address.rfind(':') + 1));
  AnswerDroppingProxy proxy(upstream,
                            [&cluster] { return cluster.CountRuns() > 0; });
  ASSERT_NE(proxy.port(), 0);
  const std::string spec = cluster.WriteRunSpec("once", /*seed=*/1);
  const std::string through_proxy = "127.0.0.1:" + std::to_string(proxy.port());

  const CommandResult submit = RunCommand(
      {BinaryPath("hpcai500"), "--coordinator", through_proxy, "submit", spec},
      std::chrono::seconds(120));
  EXPECT_EQ(submit.exit_code, 0) << submit.err;
  EXPECT_EQ(proxy.dropped(), 1) << "the first answer was not dropped";
  EXPECT_NE(submit.err.find("Socket closed"), std::string::npos) << submit.err;
  EXPECT_NE(submit.err.find("was submitted before"), std::string::npos)
      << submit.err;
  const std::string printed = FirstLine(submit.out);
  EXPECT_EQ(cluster.CountRuns(), 1);
  EXPECT_TRUE(cluster.ShowRun(printed).is_object())
      << "the CLI printed the one stored run's id: " << submit.out;

  // A CI job's retry in another process, with the id the first one used.
  const std::string request_id = RetriedRequestId(submit.err);
  ASSERT_FALSE(request_id.empty()) << submit.err;
  const CommandResult again =
      cluster.Cli({"submit", spec, "--request-id", request_id});
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.out, submit.out);
  EXPECT_EQ(cluster.CountRuns(), 1);

  PrintFaultFigures(
      "the answer to a submit lost (connection closed after the run was "
      "stored)",
      "the CLI sent request " + request_id + " again (" +
          std::to_string(proxy.relayed()) + " connections) and printed run " +
          printed + "; a second CLI with --request-id printed run " +
          FirstLine(again.out),
      "runs stored " + std::to_string(cluster.CountRuns()) +
          " for 1 submission");
}

// `hpcai500 submit SPEC` against `address`, running beside the test (which
// restarts the coordinator meanwhile), its output in files of `dir`.
class BackgroundSubmit {
 public:
  BackgroundSubmit(const std::string& dir, const std::string& address,
                   const std::string& spec)
      : out_path_(dir + "/background-submit.out"),
        err_path_(dir + "/background-submit.err"),
        process_(Options(address, spec, out_path_, err_path_)) {}

  // Waits up to 120 s for the CLI to exit (exit_code -1 when it did not,
  // or was killed); what it did.
  CommandResult Wait() {
    CommandResult result;
    const int code = process_.Wait(seconds(120));
    result.exit_code = code >= 0 && code < 128 ? code : -1;
    result.out = ReadFile(out_path_);
    result.err = ReadFile(err_path_);
    return result;
  }

 private:
  static SubprocessOptions Options(const std::string& address,
                                   const std::string& spec,
                                   const std::string& out_path,
                                   const std::string& err_path) {
    SubprocessOptions options;
    options.argv = {BinaryPath("hpcai500"), "--coordinator", address, "submit",
                    spec};
    options.stdout_path = out_path;
    options.stderr_path = err_path;
    return options;
  }

  const std::string out_path_;
  const std::string err_path_;
  Subprocess process_;
};

// Seconds since `start`, for the summary line.
int64_t SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<seconds>(std::chrono::steady_clock::now() -
                                             start)
      .count();
}

// The seconds hpcai500d stays down.
class SubmitAcrossRestart : public ::testing::TestWithParam<int> {};

TEST_P(SubmitAcrossRestart, CoordinatorDownWhenTheSubmitStartsGetsItOnceBack) {
  const int down_s = GetParam();
  FaultCluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator());
  const std::string spec = cluster.WriteRunSpec("down-at-start", /*seed=*/1);
  cluster.StopCoordinator(SIGKILL);
  const auto stopped = std::chrono::steady_clock::now();
  BackgroundSubmit submit(cluster.dir(), cluster.grpc_address(), spec);
  std::this_thread::sleep_for(seconds(down_s));
  ASSERT_TRUE(cluster.StartCoordinator());
  const int64_t back_after_s = SecondsSince(stopped);

  const CommandResult result = submit.Wait();
  EXPECT_EQ(result.exit_code, 0) << "back after " << back_after_s << " s\n"
                                 << result.err;
  EXPECT_NE(result.err.find("sending request "), std::string::npos)
      << "the first try reached a coordinator that was down: " << result.err;
  EXPECT_EQ(cluster.CountRuns(), 1);
  const std::string printed = FirstLine(result.out);
  EXPECT_TRUE(cluster.ShowRun(printed).is_object())
      << "the CLI printed the stored run's id: " << result.out;
  PrintFaultFigures("hpcai500d down when a submit started, restarted after " +
                        std::to_string(down_s) + " s",
                    "it listened again " + std::to_string(back_after_s) +
                        " s after it went down; the CLI exited " +
                        std::to_string(result.exit_code) + " and printed run " +
                        printed,
                    "runs stored " + std::to_string(cluster.CountRuns()) +
                        " for 1 submission");
}

TEST_P(SubmitAcrossRestart, CoordinatorKilledBeforeAnsweringStoresTheRunOnce) {
  const int down_s = GetParam();
  FaultCluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator());
  const std::string address = cluster.grpc_address();
  const int upstream = std::stoi(address.substr(address.rfind(':') + 1));
  // The answer is held back until the coordinator is gone: the CLI's
  // retries all come after the kill.
  AnswerDroppingProxy proxy(
      upstream, [&cluster] { return cluster.CountRuns() > 0; },
      AnswerDroppingProxy::CloseWhen::kServerCloses);
  ASSERT_NE(proxy.port(), 0);
  const std::string spec = cluster.WriteRunSpec("killed-unanswered", 1);
  BackgroundSubmit submit(cluster.dir(),
                          "127.0.0.1:" + std::to_string(proxy.port()), spec);
  ASSERT_TRUE(WaitFor([&] { return proxy.dropped() == 1; }, seconds(60)));
  cluster.StopCoordinator(SIGKILL);
  const auto stopped = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(seconds(down_s));
  ASSERT_TRUE(cluster.StartCoordinator());
  const int64_t back_after_s = SecondsSince(stopped);

  const CommandResult result = submit.Wait();
  EXPECT_EQ(result.exit_code, 0) << "back after " << back_after_s << " s\n"
                                 << result.err;
  EXPECT_NE(result.err.find("was submitted before"), std::string::npos)
      << result.err;
  EXPECT_EQ(cluster.CountRuns(), 1);
  const std::string printed = FirstLine(result.out);
  EXPECT_TRUE(cluster.ShowRun(printed).is_object())
      << "the CLI printed the one stored run's id: " << result.out;
  PrintFaultFigures(
      "hpcai500d killed after storing a submit, before its answer passed, "
      "restarted after " +
          std::to_string(down_s) + " s",
      "it listened again " + std::to_string(back_after_s) +
          " s after the kill; the CLI sent request " +
          RetriedRequestId(result.err) + " again (" +
          std::to_string(proxy.relayed()) + " connections), exited " +
          std::to_string(result.exit_code) + " and printed run " + printed,
      "runs stored " + std::to_string(cluster.CountRuns()) +
          " for 1 submission");
}

// Down for a moment, for a few retries, and for 10 s (the longest restart
// the retries are made for, cli/client/retry.h).
INSTANTIATE_TEST_SUITE_P(DownFor, SubmitAcrossRestart,
                         ::testing::Values(1, 5, 10),
                         [](const ::testing::TestParamInfo<int>& down) {
                           return std::to_string(down.param) + "s";
                         });

}  // namespace
}  // namespace hpcai500::testing
