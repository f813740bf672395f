// Run fingerprints and the attribution of a change
// (methodology/fingerprint.h).
#include "methodology/fingerprint.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace hpcai500 {
namespace {

FingerprintNode Node(const std::string& name, const std::string& libtorch) {
  FingerprintNode node;
  node.name = name;
  node.inventory.set_cpu_model("AMD EPYC 9654");
  node.inventory.set_driver_version("550.54");
  v1::Device* gpu = node.inventory.add_devices();
  gpu->set_model("NVIDIA H100");
  gpu->set_nvlink_links(18);
  *node.inventory.add_devices() = *gpu;
  (*node.inventory.mutable_versions())["libtorch"] = libtorch;
  (*node.inventory.mutable_versions())["worker_digest"] = "ab12";
  node.labels["rack"] = "r1";
  return node;
}

v1::RunSpec Spec(const std::string& precision, int64_t seed) {
  v1::RunSpec spec;
  spec.set_name("nightly");
  spec.set_workload("image_classification");
  spec.set_precision(precision);
  spec.set_nodes(2);
  spec.set_seed(seed);
  return spec;
}

TEST(MakeFingerprint, HoldsTheNodesTheSpecAndTheCoordinator) {
  const v1::Fingerprint fingerprint = MakeFingerprint(
      Spec("bf16", 7), {Node("b", "2.11.0"), Node("a", "2.11.0")},
      "hpcai500d 0.1.0 (git abc)");
  const auto& fields = fingerprint.fields();
  EXPECT_EQ(fields.at("nodes"), "a,b");
  EXPECT_EQ(fields.at("libtorch"), "2.11.0");
  EXPECT_EQ(fields.at("worker_digest"), "ab12");
  EXPECT_EQ(fields.at("gpu"), "NVIDIA H100 x2");
  EXPECT_EQ(fields.at("interconnect"), "nvlink 18 links");
  EXPECT_EQ(fields.at("driver"), "550.54");
  EXPECT_EQ(fields.at("cpu"), "AMD EPYC 9654");
  EXPECT_EQ(fields.at("label.rack"), "r1");
  EXPECT_EQ(fields.at("spec.precision"), "bf16");
  EXPECT_EQ(fields.at("spec.nodes"), "2");
  EXPECT_EQ(fields.at("coordinator"), "hpcai500d 0.1.0 (git abc)");
  // The seed differs between repetitions by design.
  EXPECT_EQ(fields.count("spec.seed"), 0u);
}

TEST(MakeFingerprint, NodesThatDisagreeListEachValue) {
  const v1::Fingerprint fingerprint = MakeFingerprint(
      Spec("fp32", 1), {Node("a", "2.12.0"), Node("b", "2.11.0")}, "v");
  EXPECT_EQ(fingerprint.fields().at("libtorch"), "2.11.0 | 2.12.0");
}

TEST(AttributeChange, NamesTheFieldThatChangedInEveryRunAfterFirst) {
  std::vector<v1::Fingerprint> before, after;
  for (int i = 0; i < 6; ++i) {
    before.push_back(
        MakeFingerprint(Spec("fp32", i), {Node("a", "2.11.0")}, "v1"));
    // The coordinator was upgraded half-way through the runs after too.
    after.push_back(MakeFingerprint(Spec("fp32", i), {Node("a", "2.12.0")},
                                    i < 3 ? "v1" : "v2"));
  }
  const std::vector<FieldShift> shifts = AttributeChange(before, after);
  ASSERT_FALSE(shifts.empty());
  EXPECT_EQ(shifts[0].field, "libtorch");
  EXPECT_EQ(shifts[0].before, "2.11.0");
  EXPECT_EQ(shifts[0].after, "2.12.0");
  EXPECT_EQ(shifts[0].after_share, 1);
  // v1 and v2 tie after: the smaller value is the usual one, as before, so
  // the coordinator is not a shift.
  EXPECT_EQ(shifts.size(), 1u);
  EXPECT_EQ(AttributionText(shifts, /*compared=*/true),
            "libtorch 2.11.0 -> 2.12.0 in every run after; node set unchanged");
}

TEST(AttributeChange, RanksTheMostConsistentShiftFirst) {
  std::vector<v1::Fingerprint> before, after;
  for (int i = 0; i < 4; ++i) {
    before.push_back(
        MakeFingerprint(Spec("fp32", i), {Node("a", "2.11.0")}, "v"));
    // Precision changed in every run after, the node in 3 of 4.
    after.push_back(MakeFingerprint(Spec("bf16", i),
                                    {Node(i == 0 ? "a" : "b", "2.11.0")}, "v"));
  }
  const std::vector<FieldShift> shifts = AttributeChange(before, after);
  ASSERT_EQ(shifts.size(), 2u);
  EXPECT_EQ(shifts[0].field, "spec.precision");
  EXPECT_EQ(shifts[1].field, "nodes");
  EXPECT_DOUBLE_EQ(shifts[1].after_share, 0.75);
  EXPECT_EQ(AttributionText(shifts, /*compared=*/true),
            "spec.precision fp32 -> bf16 in every run after; nodes a -> b in "
            "75% of runs after");
}

TEST(AttributeChange, SaysWhenNothingChangedOrNothingWasCompared) {
  const std::vector<v1::Fingerprint> same = {
      MakeFingerprint(Spec("fp32", 1), {Node("a", "2.11.0")}, "v")};
  EXPECT_TRUE(AttributeChange(same, same).empty());
  EXPECT_EQ(AttributionText({}, /*compared=*/true),
            "no fingerprint field changed; node set unchanged");
  EXPECT_EQ(AttributionText({}, /*compared=*/false),
            "no fingerprints to compare");
}

}  // namespace
}  // namespace hpcai500
