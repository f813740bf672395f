// Checkpoint manifests: the text round trip, what a parse refuses, and the
// digests the worker and the agent must compute alike.
#include "common/checkpoint_manifest.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "tests/agent/test_util.h"

namespace hpcai500 {
namespace {

CheckpointManifest Sample() {
  CheckpointManifest m;
  m.run_id = 12;
  m.attempt = 3;
  m.epoch = 4;
  m.files = {{std::string(64, '0'), "checkpoint-epoch-000004.pt"}};
  m.events = {":::MLLOG {\"key\": \"x\"}", ":::MLLOG {\"key\": \"y\"}"};
  return m;
}

TEST(CheckpointManifest, FormatThenParseGivesItBack) {
  CheckpointManifest parsed;
  std::string error;
  ASSERT_TRUE(ParseCheckpointManifest(FormatCheckpointManifest(Sample()),
                                      &parsed, &error))
      << error;
  EXPECT_EQ(parsed.run_id, 12);
  EXPECT_EQ(parsed.attempt, 3);
  EXPECT_EQ(parsed.epoch, 4);
  ASSERT_EQ(parsed.files.size(), 1u);
  EXPECT_EQ(parsed.files[0].name, "checkpoint-epoch-000004.pt");
  EXPECT_EQ(parsed.events, Sample().events);
}

TEST(CheckpointManifest, RefusesTornUnknownAndEscapingText) {
  const std::string text = FormatCheckpointManifest(Sample());
  CheckpointManifest parsed;
  std::string error;
  EXPECT_FALSE(ParseCheckpointManifest(text.substr(0, text.size() - 1), &parsed,
                                       &error));
  EXPECT_NE(error.find("not ended"), std::string::npos) << error;
  EXPECT_FALSE(ParseCheckpointManifest("other header\n", &parsed, &error));
  CheckpointManifest escaping = Sample();
  escaping.files[0].name = "../elsewhere.pt";
  EXPECT_FALSE(ParseCheckpointManifest(FormatCheckpointManifest(escaping),
                                       &parsed, &error));
  CheckpointManifest no_run = Sample();
  no_run.run_id = 0;
  EXPECT_FALSE(ParseCheckpointManifest(FormatCheckpointManifest(no_run),
                                       &parsed, &error));
}

TEST(CheckpointManifest, NamesFollowTheCheckpointsAndParseBack) {
  EXPECT_EQ(CheckpointManifestFileName(7), "checkpoint-epoch-000007.manifest");
  EXPECT_EQ(EpochOfManifestName("checkpoint-epoch-000007.manifest"), 7);
  EXPECT_EQ(EpochOfManifestName("checkpoint-epoch-000007.pt"), -1);
  EXPECT_EQ(EpochOfManifestName(".checkpoint-epoch-000007.manifest.tmp-1"), -1);
}

TEST(CheckpointManifest, FileDigestIsSha256AndTheCheckpointDigestCoversNames) {
  const agent::TempDir dir;
  const std::string path = dir.path() + "/abc";
  std::ofstream(path) << "abc";
  std::string hex, error;
  ASSERT_TRUE(Sha256OfFile(path, &hex, &error)) << error;
  EXPECT_EQ(hex,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_FALSE(Sha256OfFile(dir.path() + "/missing", &hex, &error));
  EXPECT_NE(error.find("missing"), std::string::npos);
  const CheckpointManifest::File a{hex, "a.pt"}, b{hex, "b.pt"};
  EXPECT_NE(CheckpointDigest({a}), CheckpointDigest({b}));
  EXPECT_EQ(CheckpointDigest({a, b}), CheckpointDigest({a, b}));
}

}  // namespace
}  // namespace hpcai500
