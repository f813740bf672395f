// Runs the real hpcai500-worker binary: alone, as two Gloo ranks on
// loopback, and with bad input.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "methodology/registry.h"
#include "tests/worker/test_util.h"

namespace {

using hpcai500::testing::FreePort;
using hpcai500::testing::ReadFile;
using hpcai500::testing::ScratchDir;

using ::hpcai500::testing::kWorker;

struct Event {
  std::string key;
  std::string value;  // raw JSON
  int64_t seq = 0;
  int rank = -1;
  int epoch = 0;  // 0: none
  std::string line;
};

std::string Capture(const std::string& line, const std::string& pattern) {
  std::smatch m;
  if (std::regex_search(line, m, std::regex(pattern))) return m[1];
  return "";
}

std::vector<Event> ReadEvents(const std::string& path) {
  std::vector<Event> events;
  std::istringstream in(ReadFile(path));
  for (std::string line; std::getline(in, line);) {
    Event e;
    e.line = line;
    e.key = Capture(line, "\"key\": \"([a-z0-9_]+)\"");
    e.value = Capture(line, "\"value\": (\\{[^}]*\\}|[^,]+), \"metadata\"");
    e.seq = std::stoll(Capture(line, "\"seq\": (\\d+)"));
    e.rank = std::stoi(Capture(line, "\"rank\": (\\d+)"));
    const std::string epoch = Capture(line, "\"epoch_num\": (\\d+)");
    e.epoch = epoch.empty() ? 0 : std::stoi(epoch);
    events.push_back(e);
  }
  return events;
}

std::vector<const Event*> WithKey(const std::vector<Event>& events,
                                  const std::string& key) {
  std::vector<const Event*> out;
  for (const Event& e : events) {
    if (e.key == key) out.push_back(&e);
  }
  return out;
}

// One worker process, its stdout and stderr in `<output_prefix>.stdout` and
// `.stderr`; killed when destroyed if still running.
class WorkerProcess : public hpcai500::testing::Subprocess {
 public:
  WorkerProcess(const std::vector<std::string>& args,
                const std::map<std::string, std::string>& env,
                const std::string& output_prefix)
      : Subprocess(Options(args, env, output_prefix)),
        stdout_path_(output_prefix + ".stdout"),
        stderr_path_(output_prefix + ".stderr") {}

  std::string Stderr() const { return ReadFile(stderr_path_); }
  std::string Stdout() const { return ReadFile(stdout_path_); }

 private:
  static hpcai500::testing::SubprocessOptions Options(
      const std::vector<std::string>& args,
      const std::map<std::string, std::string>& env,
      const std::string& output_prefix) {
    hpcai500::testing::SubprocessOptions o;
    o.argv = {kWorker};
    o.argv.insert(o.argv.end(), args.begin(), args.end());
    o.env = std::vector<std::string>{"PATH=/usr/bin:/bin"};
    for (const auto& [k, v] : env) o.env->push_back(k + "=" + v);
    o.stdout_path = output_prefix + ".stdout";
    o.stderr_path = output_prefix + ".stderr";
    return o;
  }

  const std::string stdout_path_;
  const std::string stderr_path_;
};

class WorkerBinaryTest : public ::testing::Test {
 protected:
  void TearDown() override {
    if (HasFailure()) scratch_.Keep();
  }

  std::vector<std::string> ConfigArgs(const std::string& events_file,
                                      std::vector<std::string> more = {}) {
    std::vector<std::string> args = {"--workload",    workload_,
                                     "--config",      config_,
                                     "--events-file", events_file};
    args.insert(args.end(), more.begin(), more.end());
    return args;
  }

  // Starts `world` ranks on loopback; destroying them kills them.
  std::vector<std::unique_ptr<WorkerProcess>> StartRanks(
      int world, const std::vector<std::string>& more) {
    const int port = FreePort();
    EXPECT_GT(port, 0);
    std::vector<std::unique_ptr<WorkerProcess>> ranks;
    for (int r = 0; r < world; ++r) {
      ranks.push_back(std::make_unique<WorkerProcess>(
          ConfigArgs(EventsFile(r), more),
          std::map<std::string, std::string>{
              {"RANK", std::to_string(r)},
              {"WORLD_SIZE", std::to_string(world)},
              {"LOCAL_RANK", std::to_string(r)},
              {"LOCAL_WORLD_SIZE", std::to_string(world)},
              {"MASTER_ADDR", "127.0.0.1"},
              {"MASTER_PORT", std::to_string(port)}},
          dir_ + "/rank" + std::to_string(r)));
    }
    return ranks;
  }

  // Starts `world` ranks on loopback and returns their exit codes.
  std::vector<int> RunRanks(int world, const std::vector<std::string>& more,
                            std::chrono::seconds timeout) {
    std::vector<std::unique_ptr<WorkerProcess>> ranks = StartRanks(world, more);
    std::vector<int> codes;
    for (auto& p : ranks) {
      codes.push_back(p->Wait(timeout));
      if (codes.back() != 0) ADD_FAILURE() << p->Stderr();
    }
    return codes;
  }

  std::string EventsFile(int rank) const {
    return dir_ + "/" + attempt_ + "/rank" + std::to_string(rank) + ".mllog";
  }

  // Trains `config` on two ranks and expects its target within its budget.
  void TrainToTarget(const std::string& config, std::chrono::seconds timeout) {
    const hpcai500::ConfigInfo* info = hpcai500::Registry::Builtin().FindConfig(
        "image_classification", config);
    ASSERT_NE(info, nullptr);
    config_ = config;
    const auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(RunRanks(2, {}, timeout), std::vector<int>({0, 0}));
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    const std::vector<Event> events = ReadEvents(EventsFile(0));
    const auto accuracies = WithKey(events, "eval_accuracy");
    ASSERT_EQ(accuracies.size(), static_cast<size_t>(info->epochs));
    for (const Event* e : accuracies) {
      std::printf("%s epoch %d: accuracy %s\n", config.c_str(), e->epoch,
                  e->value.c_str());
    }
    EXPECT_GE(std::stod(accuracies.back()->value), info->target);
    std::printf("%s on 2 ranks: %.1f s\n", config.c_str(), seconds);
  }

  // The value of rank `rank`'s hpcai500_param_checksum ("" when absent).
  std::string Checksum(int rank) const {
    const std::vector<Event> events = ReadEvents(EventsFile(rank));
    const auto checksums = WithKey(events, "hpcai500_param_checksum");
    return checksums.size() == 1 ? checksums[0]->value : "";
  }

  // Trains 3 epochs on two ranks with `extra` flags three ways: through,
  // killed once rank 0 reported a checkpoint, and then resumed; expects the
  // resumed run to end with the uninterrupted run's parameters, bit for bit.
  void ExpectKilledAndResumedRunEndsAsUninterrupted(
      const std::vector<std::string>& extra) {
    const std::string checkpoints = dir_ + "/checkpoints";
    std::vector<std::string> args = {
        "--steps-per-epoch", "3", "--epochs",        "3",
        "--threads",         "1", "--deterministic", "--checkpoint-dir",
        checkpoints};
    args.insert(args.begin(), extra.begin(), extra.end());
    attempt_ = "uninterrupted";
    std::vector<std::string> elsewhere = args;
    elsewhere.back() = dir_ + "/uninterrupted_checkpoints";
    ASSERT_EQ(RunRanks(2, elsewhere, std::chrono::seconds(240)),
              std::vector<int>({0, 0}));
    const std::string uninterrupted = Checksum(0);
    ASSERT_FALSE(uninterrupted.empty());

    attempt_ = "killed";
    {
      auto ranks = StartRanks(2, args);
      const auto deadline =
          std::chrono::steady_clock::now() + std::chrono::seconds(180);
      while (ReadFile(EventsFile(0)).find("\"hpcai500_checkpoint\"") ==
                 std::string::npos &&
             std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    }  // SIGKILL to both ranks
    const std::vector<Event> killed = ReadEvents(EventsFile(0));
    const auto saved = WithKey(killed, "hpcai500_checkpoint");
    ASSERT_FALSE(saved.empty());
    EXPECT_TRUE(WithKey(killed, "run_stop").empty())
        << "killed too late to test a resume";

    attempt_ = "resumed";
    std::vector<std::string> resume = args;
    resume.push_back("--resume");
    ASSERT_EQ(RunRanks(2, resume, std::chrono::seconds(240)),
              std::vector<int>({0, 0}));
    const std::vector<Event> rank1 = ReadEvents(EventsFile(1));
    const auto resumed = WithKey(rank1, "hpcai500_resume");
    ASSERT_EQ(resumed.size(), 1u);
    EXPECT_GE(std::stoi(resumed[0]->value), saved.back()->epoch);
    EXPECT_LT(std::stoi(resumed[0]->value), 3);
    // Only the epochs after the checkpoint ran again.
    EXPECT_EQ(WithKey(ReadEvents(EventsFile(0)), "epoch_start").size(),
              static_cast<size_t>(3 - std::stoi(resumed[0]->value)));
    EXPECT_EQ(Checksum(0), uninterrupted);
    EXPECT_EQ(Checksum(1), uninterrupted);
  }

  ScratchDir scratch_ = ScratchDir::ForCurrentTest("worker_it");
  const std::string dir_ = scratch_.path();
  std::string attempt_ = "attempt";  // folder of the events files
  std::string workload_ = "image_classification";
  std::string config_ = "fashion_mnist_smoke";
};

int64_t TimeMs(const Event& e) {
  return std::stoll(Capture(e.line, "\"time_ms\": (\\d+)"));
}

void ExpectWellFormed(const std::vector<Event>& events, int rank) {
  for (size_t i = 0; i < events.size(); ++i) {
    EXPECT_EQ(events[i].seq, static_cast<int64_t>(i + 1)) << events[i].line;
    EXPECT_EQ(events[i].rank, rank) << events[i].line;
    EXPECT_EQ(events[i].line.rfind(":::MLLOG {\"namespace\": \"\", "
                                   "\"time_ms\": ",
                                   0),
              0u);
  }
}

TEST_F(WorkerBinaryTest, AloneItTrainsAndReportsEveryEpoch) {
  WorkerProcess worker(
      ConfigArgs(EventsFile(0), {"--steps-per-epoch", "5", "--threads", "1"}),
      {}, dir_ + "/alone");
  ASSERT_EQ(worker.Wait(std::chrono::seconds(120)), 0) << worker.Stderr();

  const std::vector<Event> events = ReadEvents(EventsFile(0));
  ExpectWellFormed(events, 0);
  EXPECT_EQ(WithKey(events, "run_start").size(), 1u);
  EXPECT_EQ(WithKey(events, "epoch_stop").size(), 2u);
  EXPECT_EQ(WithKey(events, "eval_accuracy").size(), 2u);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().key, "run_stop");
  EXPECT_NE(events.back().line.find("\"status\": \"success\""),
            std::string::npos);
  // 5 steps of 64 images, per epoch.
  EXPECT_EQ(WithKey(events, "train_samples").at(0)->value, "320");
  EXPECT_NE(WithKey(events, "hpcai500_epoch_stats")
                .at(0)
                ->value.find("\"samples\": 320"),
            std::string::npos);
  EXPECT_GT(
      std::stod(
          WithKey(events, "hpcai500_forward_flops_per_sample").at(0)->value),
      1e6);
  // Every batch's forward pass is counted: 320 samples of a model whose work
  // does not depend on the data. The step's time splits into its parts.
  const std::string& stats =
      WithKey(events, "hpcai500_epoch_stats").at(0)->value;
  auto member = [&](const std::string& name) {
    const size_t at = stats.find("\"" + name + "\": ");
    EXPECT_NE(at, std::string::npos) << name << " in " << stats;
    return at == std::string::npos
               ? -1.0
               : std::stod(stats.substr(at + name.size() + 4));
  };
  EXPECT_DOUBLE_EQ(
      member("forward_flops"),
      320 * std::stod(WithKey(events, "hpcai500_forward_flops_per_sample")
                          .at(0)
                          ->value));
  EXPECT_GT(member("other_ops"), 0);
  EXPECT_GT(member("compute_seconds"), 0);
  EXPECT_GT(member("input_wait_seconds"), 0);
  EXPECT_LE(member("compute_seconds") + member("input_wait_seconds"),
            member("seconds"));
  EXPECT_NE(WithKey(events, "eval_stop").at(0)->line.find("\"eval_seconds\": "),
            std::string::npos);
  // Stdout carries the same lines.
  EXPECT_EQ(worker.Stdout(), ReadFile(EventsFile(0)));
}

TEST_F(WorkerBinaryTest, TwoRanksOverGlooAgreeOnEveryAccuracy) {
  const std::vector<int> codes =
      RunRanks(2, {"--steps-per-epoch", "4"}, std::chrono::seconds(180));
  EXPECT_EQ(codes, std::vector<int>({0, 0}));
  const std::vector<Event> rank0 = ReadEvents(EventsFile(0));
  const std::vector<Event> rank1 = ReadEvents(EventsFile(1));
  ExpectWellFormed(rank0, 0);
  ExpectWellFormed(rank1, 1);
  const auto acc0 = WithKey(rank0, "eval_accuracy");
  const auto acc1 = WithKey(rank1, "eval_accuracy");
  ASSERT_EQ(acc0.size(), 2u);
  ASSERT_EQ(acc1.size(), 2u);
  for (size_t i = 0; i < acc0.size(); ++i) {
    EXPECT_EQ(acc0[i]->epoch, static_cast<int>(i + 1));
    EXPECT_EQ(acc0[i]->value, acc1[i]->value) << "epoch " << i + 1;
  }
  // Each rank trained its own 4 x 64 images; the epoch holds both shards.
  EXPECT_EQ(WithKey(rank0, "train_samples").at(0)->value, "512");
  EXPECT_EQ(WithKey(rank0, "global_batch_size").at(0)->value, "128");
}

TEST_F(WorkerBinaryTest, TwoNoopRanksRendezvousAndReportOneEpochOfNothing) {
  workload_ = "noop";
  config_ = "noop";
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(RunRanks(2, {}, std::chrono::seconds(60)),
            std::vector<int>({0, 0}));
  std::printf(
      "noop on 2 ranks: %.3f s from start to both exits\n",
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count());
  for (int rank = 0; rank < 2; ++rank) {
    const std::vector<Event> events = ReadEvents(EventsFile(rank));
    ExpectWellFormed(events, rank);
    std::vector<std::string> keys;
    for (const Event& e : events) keys.push_back(e.key);
    EXPECT_EQ(keys, (std::vector<std::string>{
                        "init_start", "submission_benchmark", "hpcai500_config",
                        "hpcai500_unranked", "seed", "init_stop", "run_start",
                        "block_start", "epoch_start",
                        "hpcai500_forward_flops_per_sample", "epoch_stop",
                        "hpcai500_epoch_stats", "block_stop", "run_stop"}))
        << "rank " << rank;
    const Event& stats = *WithKey(events, "hpcai500_epoch_stats").at(0);
    EXPECT_EQ(stats.epoch, 1);
    EXPECT_NE(stats.value.find("\"samples\": 0,"), std::string::npos)
        << stats.value;
    EXPECT_NE(stats.value.find("\"forward_flops\": 0"), std::string::npos)
        << stats.value;
    EXPECT_NE(events.back().line.find("\"status\": \"success\""),
              std::string::npos);
    // After the rendezvous and its all-reduce, a noop has nothing left to do.
    EXPECT_LT(
        TimeMs(events.back()) - TimeMs(*WithKey(events, "epoch_stop").at(0)),
        1000);
  }
}

TEST_F(WorkerBinaryTest, VersionPrintsKeyValueLinesForTheAgent) {
  WorkerProcess worker({"--version"}, {}, dir_ + "/version");
  EXPECT_EQ(worker.Wait(std::chrono::seconds(30)), 0) << worker.Stderr();
  const std::string out = worker.Stdout();
  EXPECT_TRUE(std::regex_search(
      out, std::regex("^worker=[0-9]+\\.[0-9]+\\.[0-9]+ \\(git [0-9a-z]+\\)\n"
                      "libtorch=[0-9]+\\.[0-9]+\\.[0-9]+[^\n]*\n"
                      "cuda=(yes|no)\nnccl=(no|[0-9]+\\.[0-9]+\\.[0-9]+)\n$")))
      << out;
}

TEST_F(WorkerBinaryTest, BadConfigExitsTwoNamingIt) {
  WorkerProcess worker(
      {"--workload", "image_classification", "--config", "no_such_config"}, {},
      dir_ + "/bad");
  EXPECT_EQ(worker.Wait(std::chrono::seconds(30)), 2);
  EXPECT_NE(worker.Stderr().find("no_such_config"), std::string::npos)
      << worker.Stderr();
  EXPECT_EQ(worker.Stdout(), "");
}

TEST_F(WorkerBinaryTest, UnknownModelAndUnknownFlagExitTwo) {
  WorkerProcess model(ConfigArgs(EventsFile(0), {"--model", "resnet7"}), {},
                      dir_ + "/model");
  EXPECT_EQ(model.Wait(std::chrono::seconds(30)), 2);
  EXPECT_NE(model.Stderr().find("resnet7"), std::string::npos);
  WorkerProcess flag(ConfigArgs(EventsFile(0), {"--frobnicate", "1"}), {},
                     dir_ + "/flag");
  EXPECT_EQ(flag.Wait(std::chrono::seconds(30)), 2);
  EXPECT_NE(flag.Stderr().find("--frobnicate"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(EventsFile(0)));
}

TEST_F(WorkerBinaryTest, MissingDataEndsTheRunAbortedNamingTheFile) {
  const std::string data = dir_ + "/no-data";
  WorkerProcess worker(ConfigArgs(EventsFile(0), {"--data", data}), {},
                       dir_ + "/nodata");
  EXPECT_EQ(worker.Wait(std::chrono::seconds(60)), 1);
  const std::vector<Event> events = ReadEvents(EventsFile(0));
  ExpectWellFormed(events, 0);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().key, "run_stop");
  EXPECT_NE(events.back().line.find("\"status\": \"aborted\""),
            std::string::npos);
  EXPECT_NE(events.back().line.find("data folder " + data), std::string::npos)
      << events.back().line;
}

TEST_F(WorkerBinaryTest, SmokeConfigReachesItsTargetOnTwoRanks) {
  TrainToTarget("fashion_mnist_smoke", std::chrono::seconds(240));
}

// The full config's whole budget: a few minutes on two CPU cores.
TEST_F(WorkerBinaryTest, FashionMnistReachesItsTargetOnTwoRanks) {
  TrainToTarget("fashion_mnist", std::chrono::seconds(840));
}

// Determinism mode: the same seed and config give bit-identical parameters.
TEST_F(WorkerBinaryTest, DeterministicRunsEndWithBitIdenticalParameters) {
  const std::vector<std::string> args = {"--steps-per-epoch", "3", "--threads",
                                         "1", "--deterministic"};
  ASSERT_EQ(RunRanks(2, args, std::chrono::seconds(180)),
            std::vector<int>({0, 0}));
  const std::string first = Checksum(0);
  EXPECT_EQ(first.size(), 18u) << first;  // 16 hex digits, quoted
  EXPECT_EQ(Checksum(1), first);          // the ranks agree
  attempt_ = "second";
  ASSERT_EQ(RunRanks(2, args, std::chrono::seconds(180)),
            std::vector<int>({0, 0}));
  EXPECT_EQ(Checksum(0), first);
  // A different seed trains to different parameters.
  attempt_ = "other_seed";
  std::vector<std::string> other = args;
  other.insert(other.end(), {"--seed", "7"});
  ASSERT_EQ(RunRanks(1, other, std::chrono::seconds(180)),
            std::vector<int>({0}));
  EXPECT_NE(Checksum(0), first);
}

// Killed after a checkpoint, then resumed with --resume: the same final
// parameters as an uninterrupted run, bit for bit.
TEST_F(WorkerBinaryTest,
       KilledAndResumedRunEndsWithTheUninterruptedParameters) {
  ExpectKilledAndResumedRunEndsAsUninterrupted({});
}

// The same under PowerSGD (one warm-up step, so epoch 2 is compressed from
// the residuals epoch 1 left): each rank's error feedback, Q and step count
// come back from its part of the checkpoint.
TEST_F(WorkerBinaryTest,
       KilledAndResumedPowerSgdRunEndsWithTheUninterruptedParameters) {
  ExpectKilledAndResumedRunEndsAsUninterrupted(
      {"--compression", "powersgd", "--powersgd-warmup-steps", "1"});
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/checkpoints/" +
                                      "checkpoint-epoch-000003.rank-1.pt"));
}

TEST_F(WorkerBinaryTest, ResumeWithoutCheckpointStartsFreshAndSaysSo) {
  ASSERT_EQ(RunRanks(1,
                     {"--steps-per-epoch", "2", "--epochs", "1", "--resume",
                      "--checkpoint-dir", dir_ + "/empty"},
                     std::chrono::seconds(120)),
            std::vector<int>({0}));
  const std::vector<Event> events = ReadEvents(EventsFile(0));
  const auto resumed = WithKey(events, "hpcai500_resume");
  ASSERT_EQ(resumed.size(), 1u);
  EXPECT_EQ(resumed[0]->value, "null");
  EXPECT_EQ(WithKey(ReadEvents(EventsFile(0)), "epoch_start").size(), 1u);
  EXPECT_TRUE(
      std::filesystem::exists(dir_ + "/empty/checkpoint-epoch-000001.pt"));
}

TEST_F(WorkerBinaryTest, TruncatedCheckpointAbortsTheResumeNamingTheFile) {
  const std::string checkpoints = dir_ + "/checkpoints";
  std::filesystem::create_directories(checkpoints);
  const std::string file = checkpoints + "/checkpoint-epoch-000001.pt";
  std::ofstream(file) << "PK\x03\x04 cut short";
  WorkerProcess worker(
      ConfigArgs(EventsFile(0), {"--steps-per-epoch", "2", "--resume",
                                 "--checkpoint-dir", checkpoints}),
      {}, dir_ + "/truncated");
  EXPECT_EQ(worker.Wait(std::chrono::seconds(120)), 1);
  const std::vector<Event> events = ReadEvents(EventsFile(0));
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().key, "run_stop");
  EXPECT_NE(events.back().line.find("\"status\": \"aborted\""),
            std::string::npos);
  EXPECT_NE(events.back().line.find(file), std::string::npos)
      << events.back().line;
}

}  // namespace
