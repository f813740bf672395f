#include "common/vocabulary.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "common/event_keys.h"

namespace hpcai500 {
namespace {

template <typename Enum>
void ExpectEveryNameRoundTrips() {
  for (std::string_view name : AllNames<Enum>()) {
    std::optional<Enum> value = Parse<Enum>(name);
    ASSERT_TRUE(value) << name;
    EXPECT_EQ(Name(*value), name);
  }
}

TEST(Vocabulary, EveryNameParsesBackToItself) {
  ExpectEveryNameRoundTrips<Device>();
  ExpectEveryNameRoundTrips<Precision>();
  ExpectEveryNameRoundTrips<Compression>();
  ExpectEveryNameRoundTrips<DistBackend>();
  ExpectEveryNameRoundTrips<Launcher>();
  ExpectEveryNameRoundTrips<Level>();
  ExpectEveryNameRoundTrips<Scaling>();
}

TEST(Vocabulary, ListsTheWireSpellings) {
  EXPECT_EQ(JoinNames<Device>(", "), "cpu, cuda");
  EXPECT_EQ(JoinNames<Precision>("|"), "fp32|bf16|fp16");
  EXPECT_EQ(NamesInProse<Compression>(), "none, fp16, bf16 or powersgd");
  EXPECT_EQ(Name(Compression::kPowerSgd), "powersgd");
  EXPECT_EQ(Parse<Precision>("bf16"), Precision::kBf16);
  EXPECT_EQ(NamesInProse<DistBackend>(), "gloo or nccl");
}

TEST(Vocabulary, NamesLaunchersAndLevelsAsSpecsSpellThem) {
  EXPECT_EQ(JoinNames<Launcher>(", "), "agent, mpirun, srun");
  EXPECT_EQ(Name(Launcher::kSrun), "srun");
  EXPECT_EQ(JoinNames<Level>(", "), "hardware, system, free");
  EXPECT_EQ(Parse<Level>("free"), Level::kFree);
  EXPECT_FALSE(Parse<Launcher>("torchrun"));
  EXPECT_EQ(JoinNames<Scaling>(", "), "strong, weak");
}

TEST(Vocabulary, JoinsAnyListInProse) {
  EXPECT_EQ(JoinInProse(std::vector<std::string>{}), "");
  EXPECT_EQ(JoinInProse(std::vector<std::string>{"a"}), "a");
  EXPECT_EQ(JoinInProse(std::vector<std::string_view>{"a", "b"}), "a or b");
  EXPECT_EQ(JoinInProse(std::vector<std::string>{"a", "b", "c"}), "a, b or c");
}

TEST(Vocabulary, RefusesOtherSpellings) {
  EXPECT_FALSE(Parse<Precision>("fp8"));
  EXPECT_FALSE(Parse<Precision>("FP32"));
  EXPECT_FALSE(Parse<Device>(""));
  EXPECT_FALSE(Parse<Compression>("powersgd "));
}

TEST(EventKeys, SpellTheDocumentedNames) {
  EXPECT_STREQ(event_keys::kRunStop, "run_stop");
  EXPECT_STREQ(event_keys::kEvalAccuracy, "eval_accuracy");
  EXPECT_STREQ(event_keys::kEpochStats, "hpcai500_epoch_stats");
  EXPECT_STREQ(event_keys::kForwardFlopsPerSample,
               "hpcai500_forward_flops_per_sample");
  EXPECT_STREQ(event_keys::kMetaEpochNum, "epoch_num");
}

}  // namespace
}  // namespace hpcai500
