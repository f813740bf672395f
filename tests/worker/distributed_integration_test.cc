// The real hpcai500-worker as two Gloo ranks on loopback: compression keeps
// accuracy while sending fewer bytes, and the stall watchdog ends a rank
// whose peer was stopped with SIGSTOP.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using Clock = std::chrono::steady_clock;

const char kWorker[] = HPCAI500_BINARY_DIR "/bin/hpcai500-worker";

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

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

int UnusedLoopbackPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  int port = -1;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), len) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  return port;
}

// One rank of a two-rank run; killed when destroyed if still running.
class Rank {
 public:
  Rank(int rank, int port, const std::vector<std::string>& args,
       const std::string& dir)
      : log_(dir + "/rank" + std::to_string(rank) + ".log") {
    std::vector<std::string> argv_s = {kWorker};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<std::string> env_s = {"PATH=/usr/bin:/bin",
                                      "RANK=" + std::to_string(rank),
                                      "WORLD_SIZE=2",
                                      "LOCAL_RANK=" + std::to_string(rank),
                                      "LOCAL_WORLD_SIZE=2",
                                      "MASTER_ADDR=127.0.0.1",
                                      "MASTER_PORT=" + std::to_string(port)};
    pid_ = ::fork();
    if (pid_ == 0) {
      int fd = ::open(log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      std::vector<char*> argv, envp;
      for (auto& a : argv_s) argv.push_back(a.data());
      argv.push_back(nullptr);
      for (auto& e : env_s) envp.push_back(e.data());
      envp.push_back(nullptr);
      ::execve(kWorker, argv.data(), envp.data());
      ::_exit(127);
    }
  }
  ~Rank() { Kill(); }

  void Signal(int sig) { ::kill(pid_, sig); }
  void Kill() {
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
      reaped_ = true;
    }
  }
  // The exit code, or -1 when it did not exit within `timeout`.
  int Wait(Clock::duration timeout) {
    const auto deadline = Clock::now() + timeout;
    while (Clock::now() < deadline) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        reaped_ = true;
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      }
      std::this_thread::sleep_for(milliseconds(50));
    }
    return -1;
  }
  std::string Log() const { return Slurp(log_); }

 private:
  const std::string log_;
  pid_t pid_ = -1;
  bool reaped_ = false;
};

class DistributedWorkerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::string(::testing::TempDir()) + "/dist_it_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name() +
           "_" + std::to_string(::getpid());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    if (!HasFailure()) std::filesystem::remove_all(dir_);
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
    const int port = UnusedLoopbackPort();
    std::vector<std::unique_ptr<Rank>> ranks;
    for (int r = 0; r < 2; ++r) {
      ranks.push_back(std::make_unique<Rank>(r, port, Args(run, r, more),
                                             dir_ + "/" + run));
    }
    for (auto& rank : ranks) {
      EXPECT_EQ(rank->Wait(std::chrono::minutes(10)), 0) << rank->Log();
    }
    return Slurp(Events(run, 0));
  }

  std::string dir_;
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
  const std::string psgd = TrainTwoRanks(
      "powersgd", {"--compression", "powersgd", "--powersgd-rank", "4"});
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
  EXPECT_LT(CommBytes(psgd) * 5, CommBytes(none));
  EXPECT_EQ(AllMatches(psgd, "\"comm_wait_seconds\": ([0-9.e-]+)").size(), 2u);
}

TEST_F(DistributedWorkerTest, WatchdogEndsARankWhosePeerIsStopped) {
  constexpr int kWatchdogSeconds = 5;
  const int port = UnusedLoopbackPort();
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
  while (Slurp(Events("stall", 0)).find("\"epoch_start\"") ==
             std::string::npos &&
         Clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(100));
  }
  ASSERT_NE(Slurp(Events("stall", 0)).find("\"epoch_start\""),
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
  const std::string events = Slurp(Events("stall", 0));
  const std::vector<std::string> stops =
      AllMatches(events, "(\"key\": \"run_stop\".*)");
  ASSERT_EQ(stops.size(), 1u) << events;
  EXPECT_NE(stops[0].find("\"status\": \"aborted\""), std::string::npos);
  EXPECT_NE(stops[0].find("watchdog: no progress for 5 s (stuck in "),
            std::string::npos)
      << stops[0];
}

}  // namespace
