#include "worker/events/event_log.h"

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

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string TempDir(const std::string& name) {
  std::string dir = std::string(::testing::TempDir()) + "/event_log_test_" +
                    name + "_" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  return dir;
}

// A clock that replays the given instants, one per call.
EventLog::Clock ReplayClock(std::vector<int64_t> times) {
  auto next = std::make_shared<size_t>(0);
  return [times = std::move(times), next]() { return times.at((*next)++); };
}

std::vector<int64_t> TimesOf(const std::string& text) {
  std::vector<int64_t> times;
  std::regex re("\"time_ms\": (\\d+)");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re);
       it != std::sregex_iterator(); ++it) {
    times.push_back(std::stoll((*it)[1]));
  }
  return times;
}

// Writes the events of tests/fixtures/events/fmnist_rank0.mllog through an
// EventLog and expects the very same bytes: key order, metadata, seq 1..n.
TEST(EventLog, ReproducesTheFixtureByteForByte) {
  const std::string fixture =
      ReadFile(HPCAI500_SOURCE_DIR "/tests/fixtures/events/fmnist_rank0.mllog");
  ASSERT_FALSE(fixture.empty());
  const std::string dir = TempDir("fixture");
  const std::string path = dir + "/nested/rank0.mllog";
  std::string error;
  auto log = EventLog::Open(path, /*rank=*/0, /*echo=*/nullptr,
                            ReplayClock(TimesOf(fixture)), &error);
  ASSERT_NE(log, nullptr) << error;

  using T = EventType;
  // The fixture (read by the agent's and the coordinator's tests too) names
  // one source line for every event; where a line was logged is the
  // caller's to give.
  const SourceLine fixture_source{"worker/engine.cc", 0};
  auto emit = [&](T type, std::string_view key, std::string_view value,
                  const JsonMembers& metadata = {}) {
    log->Emit(type, key, value, metadata, fixture_source);
  };
  emit(T::kPointInTime, "submission_benchmark",
       JsonString("image_classification"));
  emit(T::kPointInTime, "hpcai500_config", JsonString("fashion_mnist_smoke"),
       {{"model", JsonString("resnet_small")},
        {"dataset", JsonString("fashion_mnist")}});
  emit(T::kPointInTime, "seed", JsonInt(42));
  emit(T::kPointInTime, "global_batch_size", JsonInt(128));
  emit(T::kPointInTime, "train_samples", JsonInt(6000));
  emit(T::kPointInTime, "eval_samples", JsonInt(2000));
  emit(T::kPointInTime, "hpcai500_forward_flops_per_sample", JsonDouble(12e6),
       {{"convention",
         JsonString("convolutions and matrix products; multiply-add = "
                    "2")}});
  emit(T::kIntervalStart, "run_start", kJsonNull);
  const double losses[] = {0.91, 0.52};
  const double accuracies[] = {0.69, 0.77};
  for (int epoch = 1; epoch <= 2; ++epoch) {
    const JsonMembers meta = {{"epoch_num", JsonInt(epoch)}};
    emit(T::kIntervalStart, "epoch_start", kJsonNull, meta);
    emit(T::kIntervalEnd, "epoch_stop", kJsonNull, meta);
    emit(T::kPointInTime, "hpcai500_epoch_stats",
         JsonObject({{"samples", JsonInt(3000)},
                     {"seconds", JsonDouble(10.0)},
                     {"throughput", JsonDouble(300.0)},
                     {"train_loss", JsonDouble(losses[epoch - 1])}}),
         meta);
    emit(T::kIntervalStart, "eval_start", kJsonNull, meta);
    emit(T::kIntervalEnd, "eval_stop", kJsonNull, meta);
    emit(T::kPointInTime, "eval_accuracy", JsonDouble(accuracies[epoch - 1]),
         meta);
  }
  emit(T::kIntervalEnd, "run_stop", kJsonNull,
       {{"status", JsonString("success")}});
  EXPECT_EQ(log->next_seq(), 22);
  log.reset();

  EXPECT_EQ(ReadFile(path), fixture);
  std::filesystem::remove_all(dir);
}

TEST(EventLog, AppendsToAnExistingFileAndEchoes) {
  const std::string dir = TempDir("append");
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/events.mllog";
  std::ofstream(path) << "earlier line\n";
  std::FILE* echo = std::tmpfile();
  ASSERT_NE(echo, nullptr);
  std::string error;
  auto log = EventLog::Open(
      path, /*rank=*/3, echo, [] { return int64_t{7}; }, &error);
  ASSERT_NE(log, nullptr) << error;
  log->Emit(EventType::kIntervalEnd, "run_stop", kJsonNull,
            {{"status", JsonString("aborted")},
             {"reason", JsonString("bad \"quote\"\n")}},
            SourceLine{"worker/train/run.cc", 127});
  log.reset();

  const std::string expected_line =
      ":::MLLOG {\"namespace\": \"\", \"time_ms\": 7, \"event_type\": "
      "\"INTERVAL_END\", \"key\": \"run_stop\", \"value\": null, "
      "\"metadata\": {\"file\": \"worker/train/run.cc\", \"lineno\": 127, "
      "\"seq\": 1, \"rank\": 3, \"status\": \"aborted\", \"reason\": \"bad "
      "\\\"quote\\\"\\n\"}}\n";
  EXPECT_EQ(ReadFile(path), "earlier line\n" + expected_line);
  std::rewind(echo);
  char buf[1024] = {};
  size_t n = std::fread(buf, 1, sizeof(buf) - 1, echo);
  EXPECT_EQ(std::string(buf, n), expected_line);
  std::fclose(echo);
  std::filesystem::remove_all(dir);
}

// MLPerf's "file" and "lineno" metadata say where the line was logged: by
// default the caller of Emit(), its path from the repository's root (never
// the build machine's), a path outside the repository as given.
TEST(EventLog, NamesTheCallersSourceLineFromTheRepositoryRoot) {
  std::string error;
  std::FILE* echo = std::tmpfile();
  ASSERT_NE(echo, nullptr);
  auto log = EventLog::Open(
      "", /*rank=*/0, echo, [] { return int64_t{1}; }, &error);
  ASSERT_NE(log, nullptr) << error;
  const int emit_line = __LINE__ + 1;
  log->Emit(EventType::kPointInTime, "seed", JsonInt(42));
  log->Emit(EventType::kPointInTime, "seed", JsonInt(43), /*metadata=*/{},
            SourceLine{"/elsewhere/generated.cc", 9});
  log.reset();
  std::rewind(echo);
  char buf[1024] = {};
  const std::string text(buf, std::fread(buf, 1, sizeof(buf) - 1, echo));
  std::fclose(echo);

  EXPECT_NE(text.find("\"file\": \"tests/worker/events/event_log_test.cc\", "
                      "\"lineno\": " +
                      std::to_string(emit_line) + ","),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\"file\": \"/elsewhere/generated.cc\", \"lineno\": 9,"),
            std::string::npos)
      << text;
}

TEST(EventLog, RefusesALineOverTheLimitWithoutUsingASeq) {
  std::string error;
  auto log = EventLog::Open(
      "", 0, nullptr, [] { return int64_t{1}; }, &error);
  ASSERT_NE(log, nullptr);
  EXPECT_THROW(log->Emit(EventType::kPointInTime, "huge",
                         JsonString(std::string(kMaxLineBytes, 'x'))),
               std::runtime_error);
  EXPECT_EQ(log->next_seq(), 1);
}

TEST(EventLog, KeepsTheLinesWrittenSinceKeepLinesUntilTaken) {
  std::string error;
  auto log = EventLog::Open(
      "", 0, nullptr, [] { return int64_t{1}; }, &error);
  ASSERT_NE(log, nullptr);
  log->Emit(EventType::kPointInTime, "before", kJsonNull);
  log->KeepLines();
  log->Emit(EventType::kPointInTime, "first", kJsonNull);
  log->Emit(EventType::kPointInTime, "second", kJsonNull);
  const std::vector<std::string> kept = log->TakeKeptLines();
  ASSERT_EQ(kept.size(), 2u);
  EXPECT_NE(kept[0].find("\"key\": \"first\""), std::string::npos);
  EXPECT_NE(kept[0].find("\"seq\": 2,"), std::string::npos) << kept[0];
  EXPECT_EQ(kept[1].find('\n'), std::string::npos);  // whole lines, no "\n"
  log->Emit(EventType::kPointInTime, "third", kJsonNull);
  ASSERT_EQ(log->TakeKeptLines().size(), 1u);
  EXPECT_TRUE(log->TakeKeptLines().empty());
}

TEST(EventLog, OpenNamesTheUnwritablePath) {
  std::string error;
  auto log = EventLog::Open("/proc/no/such/dir/events.mllog", 0, nullptr,
                            EventLog::SystemClockMs, &error);
  EXPECT_EQ(log, nullptr);
  EXPECT_NE(error.find("/proc/no/such/dir"), std::string::npos) << error;
}

TEST(JsonDouble, KeepsIntegralValuesFloatAndOthersShortest) {
  EXPECT_EQ(JsonDouble(12000000.0), "12000000.0");
  EXPECT_EQ(JsonDouble(0.91), "0.91");
  EXPECT_EQ(JsonDouble(1.0 / 3.0), "0.3333333333333333");
  EXPECT_EQ(JsonDouble(std::nan("")), "null");
}

}  // namespace
}  // namespace hpcai500::worker
