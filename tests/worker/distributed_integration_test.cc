// The real hpcai500-worker as two Gloo ranks on loopback: compression keeps
// accuracy while sending fewer bytes, and the stall watchdog ends a rank
// whose peer was stopped with SIGSTOP.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <memory>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "tests/worker/test_util.h"

namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using Clock = std::chrono::steady_clock;
using hpcai500::testing::FreePort;
using hpcai500::testing::ReadFile;
using hpcai500::testing::ScratchDir;

using ::hpcai500::testing::kWorker;

// Every capture of `pattern`'s first group in `text`, in order.
std::vector<std::string> AllMatches(const std::string& text,
                                    const std::string& pattern) {
  std::vector<std::string> out;
  const std::regex re(pattern);
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re);
       it != std::sregex_iterator(); ++it) {
    out.push_back((*it)[1]);
  }
  return out;
}

// One rank of a two-rank run, its output in `dir`/rank<N>.log; killed when
// destroyed if still running.
class Rank : public hpcai500::testing::Subprocess {
 public:
  Rank(int rank, int port, const std::vector<std::string>& args,
       const std::string& dir)
      : Subprocess(Options(rank, port, args, dir)),
        log_(dir + "/rank" + std::to_string(rank) + ".log") {}

  std::string Log() const { return ReadFile(log_); }

 private:
  static hpcai500::testing::SubprocessOptions Options(
      int rank, int port, const std::vector<std::string>& args,
      const std::string& dir) {
    hpcai500::testing::SubprocessOptions o;
    o.argv = {kWorker};
    o.argv.insert(o.argv.end(), args.begin(), args.end());
    o.env = {"PATH=/usr/bin:/bin",
             "RANK=" + std::to_string(rank),
             "WORLD_SIZE=2",
             "LOCAL_RANK=" + std::to_string(rank),
             "LOCAL_WORLD_SIZE=2",
             "MASTER_ADDR=127.0.0.1",
             "MASTER_PORT=" + std::to_string(port)};
    o.stdout_path = o.stderr_path =
        dir + "/rank" + std::to_string(rank) + ".log";
    return o;
  }

  const std::string log_;
};

class DistributedWorkerTest : public ::testing::Test {
 protected:
  void TearDown() override {
    if (HasFailure()) scratch_.Keep();
  }

  std::string Events(const std::string& run, int rank) const {
    return dir_ + "/" + run + ".rank" + std::to_string(rank) + ".mllog";
  }

  std::vector<std::string> Args(const std::string& run, int rank,
                                const std::vector<std::string>& more) const {
    std::vector<std::string> args = {"--workload",    "image_classification",
                                     "--config",      "fashion_mnist_smoke",
                                     "--threads",     "1",
                                     "--events-file", Events(run, rank)};
    args.insert(args.end(), more.begin(), more.end());
    return args;
  }

  // Trains two ranks to the end; returns rank 0's events.
  std::string TrainTwoRanks(const std::string& run,
                            const std::vector<std::string>& more) {
    const int port = FreePort();
    std::vector<std::unique_ptr<Rank>> ranks;
    for (int r = 0; r < 2; ++r) {
      ranks.push_back(std::make_unique<Rank>(r, port, Args(run, r, more),
                                             dir_ + "/" + run));
    }
    for (auto& rank : ranks) {
      EXPECT_EQ(rank->Wait(std::chrono::minutes(10)), 0) << rank->Log();
    }
    return ReadFile(Events(run, 0));
  }

  ScratchDir scratch_ = ScratchDir::ForCurrentTest("dist_it");
  const std::string dir_ = scratch_.path();
};

double FinalAccuracy(const std::string& events) {
  const std::vector<std::string> acc =
      AllMatches(events, "\"key\": \"eval_accuracy\", \"value\": ([0-9.e-]+)");
  return acc.empty() ? -1 : std::stod(acc.back());
}

int64_t CommBytes(const std::string& events) {
  const std::vector<std::string> bytes =
      AllMatches(events, "\"comm_bytes\": (\\d+)");
  int64_t total = 0;
  for (const auto& b : bytes) total += std::stoll(b);
  return total;
}

TEST_F(DistributedWorkerTest, PowerSgdTrainsToTheAccuracyBandOfNoCompression) {
  std::filesystem::create_directories(dir_ + "/none");
  std::filesystem::create_directories(dir_ + "/powersgd");
  const std::string none = TrainTwoRanks("none", {"--compression", "none"});
  // 10 of the run's 94 steps go uncompressed before PowerSGD starts.
  const std::string psgd =
      TrainTwoRanks("powersgd", {"--compression", "powersgd", "--powersgd-rank",
                                 "4", "--powersgd-warmup-steps", "10"});
  const double acc_none = FinalAccuracy(none);
  const double acc_psgd = FinalAccuracy(psgd);
  std::printf(
      "accuracy none %.4f powersgd %.4f; comm bytes none %lld "
      "powersgd %lld\n",
      acc_none, acc_psgd, static_cast<long long>(CommBytes(none)),
      static_cast<long long>(CommBytes(psgd)));
  EXPECT_GT(acc_none, 0.5);
  EXPECT_LT(std::fabs(acc_psgd - acc_none), 0.05);
  EXPECT_GT(CommBytes(none), 0);
  EXPECT_LT(CommBytes(psgd) * 3, CommBytes(none));
  EXPECT_EQ(AllMatches(psgd, "\"comm_wait_seconds\": ([0-9.e-]+)").size(), 2u);
}

TEST_F(DistributedWorkerTest, WatchdogEndsARankWhosePeerIsStopped) {
  constexpr int kWatchdogSeconds = 5;
  const int port = FreePort();
  const std::vector<std::string> more = {"--epochs",
                                         "20",
                                         "--watchdog-seconds",
                                         std::to_string(kWatchdogSeconds),
                                         "--collective-timeout-seconds",
                                         "600"};
  Rank rank0(0, port, Args("stall", 0, more), dir_);
  Rank rank1(1, port, Args("stall", 1, more), dir_);
  // Mid-training: rank 0 has taken a few steps (its first epoch is under way).
  const auto deadline = Clock::now() + std::chrono::minutes(3);
  while (ReadFile(Events("stall", 0)).find("\"epoch_start\"") ==
             std::string::npos &&
         Clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(100));
  }
  ASSERT_NE(ReadFile(Events("stall", 0)).find("\"epoch_start\""),
            std::string::npos)
      << rank0.Log();
  std::this_thread::sleep_for(milliseconds(1500));
  rank1.Signal(SIGSTOP);
  const auto stopped = Clock::now();
  const int code = rank0.Wait(seconds(kWatchdogSeconds + 20));
  const double took =
      std::chrono::duration<double>(Clock::now() - stopped).count();
  rank1.Kill();
  EXPECT_EQ(code, 1) << rank0.Log();
  EXPECT_GE(took, kWatchdogSeconds - 1.0);
  const std::string events = ReadFile(Events("stall", 0));
  const std::vector<std::string> stops =
      AllMatches(events, "(\"key\": \"run_stop\".*)");
  ASSERT_EQ(stops.size(), 1u) << events;
  EXPECT_NE(stops[0].find("\"status\": \"aborted\""), std::string::npos);
  EXPECT_NE(stops[0].find("watchdog: no progress for 5 s (stuck in "),
            std::string::npos)
      << stops[0];
}

}  // namespace
