// Result bundles (methodology/bundle.h, bundle_verify.h): a sealed bundle
// of the Fashion-MNIST fixture run verifies; each part of it tampered with
// is refused by the check that names that part.
#include "methodology/bundle.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "methodology/bundle_verify.h"
#include "methodology/convergence.h"
#include "methodology/regress_band.h"
#include "methodology/scoring.h"
#include "tests/common/test_files.h"

namespace hpcai500 {
namespace {

constexpr int64_t kRunId = 7;

std::string FixtureText(const std::string& name) {
  return absl::StrJoin(testing::FixtureLines(name), "\n") + "\n";
}

// The Fashion-MNIST fixture run (two ranks, one attempt) as the
// coordinator would export it: scored from its own lines.
BundleContents FixtureContents() {
  const Registry& registry = Registry::Builtin();
  BundledRun bundled;
  v1::Run& run = bundled.run;
  run.set_id(kRunId);
  run.set_submission_id(3);
  run.set_state(v1::RUN_STATE_SUCCEEDED);
  v1::RunSpec& spec = *run.mutable_spec();
  spec.set_workload("image_classification");
  spec.set_config("fashion_mnist_smoke");
  spec.set_nodes(1);
  spec.set_ranks_per_node(2);
  spec.set_batch_size(64);
  spec.set_repetitions(1);
  v1::Attempt& attempt = *run.add_attempts();
  attempt.set_number(1);
  attempt.add_nodes("node-a");
  v1::Inventory inventory;
  inventory.set_cpu_model("Example CPU 9000");
  inventory.set_cpu_cores(2);
  (*inventory.mutable_versions())["libtorch"] = "2.5.1";
  (*attempt.mutable_inventory())["node-a"] = inventory;
  bundled.mllog[{1, 0}] = FixtureText("events/fmnist_rank0.mllog");
  bundled.mllog[{1, 1}] = FixtureText("events/fmnist_rank1.mllog");
  absl::StatusOr<RecomputedRun> recomputed = RecomputeRun(bundled, registry);
  EXPECT_TRUE(recomputed.ok()) << recomputed.status();
  if (recomputed.ok()) {
    *run.mutable_score() = recomputed->score;
    *run.mutable_epochs() = {recomputed->epochs.begin(),
                             recomputed->epochs.end()};
  }
  BundleContents contents;
  contents.runs.push_back(bundled);
  contents.references =
      registry.References("image_classification", "fashion_mnist_smoke");
  return contents;
}

class BundleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<SiteKey> key = SiteKey::Generate();
    ASSERT_TRUE(key.ok()) << key.status();
    key_.emplace(*key);
    absl::StatusOr<std::vector<ArchiveEntry>> files =
        BundleFiles(FixtureContents());
    ASSERT_TRUE(files.ok()) << files.status();
    files_ = *files;
    bundle_ = Seal(files_);
  }

  std::string Seal(const std::vector<ArchiveEntry>& files) {
    absl::StatusOr<std::string> sealed =
        SealBundle(files, *key_, "run 7", /*created_ms=*/1764662500000);
    EXPECT_TRUE(sealed.ok()) << sealed.status();
    return sealed.value_or("");
  }

  // The entries of `bundle` as they are, manifest and signature included.
  static std::vector<ArchiveEntry> Entries(const std::string& bundle) {
    absl::StatusOr<std::vector<ArchiveEntry>> entries = ReadArchive(bundle);
    EXPECT_TRUE(entries.ok()) << entries.status();
    return entries.value_or(std::vector<ArchiveEntry>{});
  }

  // `bundle` with the entry at `path` passed through `edit`, not re-signed.
  template <typename Edit>
  static std::string Edited(const std::string& bundle, const std::string& path,
                            Edit edit) {
    std::vector<ArchiveEntry> entries = Entries(bundle);
    for (ArchiveEntry& entry : entries) {
      if (entry.path == path) edit(entry.data);
    }
    return WriteArchive(entries).value_or("");
  }

  // The bundle's files with the one at `path` passed through `edit`, sealed
  // again by the same key: what a dishonest site could make.
  template <typename Edit>
  std::string Resealed(const std::string& path, Edit edit) {
    std::vector<ArchiveEntry> files = files_;
    for (ArchiveEntry& file : files) {
      if (file.path == path) edit(file.data);
    }
    return Seal(files);
  }

  static BundleCheck Failure(const BundleReport& report) {
    const BundleCheck* failed = report.FirstFailure();
    EXPECT_NE(failed, nullptr) << "every check held";
    return failed == nullptr ? BundleCheck{} : *failed;
  }

  std::optional<SiteKey> key_;
  std::vector<ArchiveEntry> files_;
  std::string bundle_;
};

TEST_F(BundleTest, SealedBundleVerifiesEveryCheck) {
  const BundleReport report = VerifyBundle(bundle_, Registry::Builtin());
  for (const BundleCheck& check : report.checks) {
    EXPECT_TRUE(check.ok) << check.name << ": " << check.detail;
  }
  std::vector<std::string> names;
  for (const BundleCheck& check : report.checks) names.push_back(check.name);
  EXPECT_EQ(absl::StrJoin(names, ","),
            "archive,manifest,signature,digests,contents,mllog run 7,"
            "score run 7,convergence");
  ASSERT_TRUE(report.manifest.has_value());
  EXPECT_EQ(report.manifest->site_key, key_->PublicKeyHex());
  ASSERT_TRUE(report.contents.has_value());
  const v1::Run& run = report.contents->runs.at(0).run;
  EXPECT_EQ(run.attempts(0).inventory().at("node-a").cpu_model(),
            "Example CPU 9000");
  EXPECT_GT(run.score().flops(), 0);
}

TEST_F(BundleTest, SealingTheSameFilesGivesTheSameBytes) {
  EXPECT_EQ(Seal(files_), bundle_);
}

TEST_F(BundleTest, SiteKeyRoundTripsThroughPem) {
  absl::StatusOr<SiteKey> again = SiteKey::FromPem(key_->ToPem());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->PublicKeyHex(), key_->PublicKeyHex());
  EXPECT_FALSE(SiteKey::FromPem("not a key").ok());
}

TEST_F(BundleTest, AnotherExpectedSiteKeyIsRefused) {
  VerifyOptions options;
  options.expected_site_key = std::string(64, 'a');
  const BundleCheck failed =
      Failure(VerifyBundle(bundle_, Registry::Builtin(), options));
  EXPECT_EQ(failed.name, "site key");
}

TEST_F(BundleTest, TamperedSignatureIsRefused) {
  const std::string bundle =
      Edited(bundle_, kBundleSignaturePath, [](std::string& signature) {
        signature[0] = signature[0] == 'a' ? 'b' : 'a';
      });
  const BundleCheck failed = Failure(VerifyBundle(bundle, Registry::Builtin()));
  EXPECT_EQ(failed.name, "signature");
  EXPECT_NE(failed.detail.find("does not match"), std::string::npos);
}

TEST_F(BundleTest, TamperedDigestIsRefusedNamingTheFile) {
  const std::string path = "runs/7/score.json";
  const std::string digest = Sha256Hex(files_[3].data);  // score.json
  ASSERT_EQ(files_[3].path, path);
  const std::string bundle =
      Edited(bundle_, kBundleManifestPath, [&](std::string& manifest) {
        manifest =
            absl::StrReplaceAll(manifest, {{digest, std::string(64, '0')}});
      });
  const BundleReport report = VerifyBundle(bundle, Registry::Builtin());
  EXPECT_EQ(Failure(report).name, "signature");
  for (const BundleCheck& check : report.checks) {
    if (check.name == "digests") {
      EXPECT_FALSE(check.ok);
      EXPECT_NE(check.detail.find(path), std::string::npos) << check.detail;
    }
  }
}

TEST_F(BundleTest, TamperedMllogLineIsRefusedNamingTheFile) {
  const std::string path = "runs/7/attempt-1/rank-1.mllog";
  const std::string bundle = Edited(bundle_, path, [](std::string& text) {
    text =
        absl::StrReplaceAll(text, {{"\"samples\": 3000", "\"samples\": 9000"}});
  });
  const BundleCheck failed = Failure(VerifyBundle(bundle, Registry::Builtin()));
  EXPECT_EQ(failed.name, "digests");
  EXPECT_NE(failed.detail.find(path), std::string::npos) << failed.detail;
}

TEST_F(BundleTest, ResignedMllogThatDisagreesWithTheScoreIsRefused) {
  const std::string bundle =
      Resealed("runs/7/attempt-1/rank-1.mllog", [](std::string& text) {
        text = absl::StrReplaceAll(
            text, {{"\"samples\": 3000", "\"samples\": 9000"}});
      });
  const BundleCheck failed = Failure(VerifyBundle(bundle, Registry::Builtin()));
  EXPECT_EQ(failed.name, "score run 7");
  EXPECT_NE(failed.detail.find("samples"), std::string::npos) << failed.detail;
}

TEST_F(BundleTest, ResignedMllogOutOfOrderBreaksTheRules) {
  const std::string bundle =
      Resealed("runs/7/attempt-1/rank-0.mllog", [](std::string& text) {
        text = absl::StrReplaceAll(
            text, {{"\"status\": \"success\"", "\"status\": \"aborted\""}});
      });
  const BundleCheck failed = Failure(VerifyBundle(bundle, Registry::Builtin()));
  EXPECT_EQ(failed.name, "mllog run 7");
  EXPECT_NE(failed.detail.find("rank-0.mllog"), std::string::npos);
  EXPECT_NE(failed.detail.find("success"), std::string::npos);
}

TEST_F(BundleTest, ResignedClaimedScoreIsRefused) {
  const std::string bundle =
      Resealed("runs/7/score.json", [](std::string& score) {
        const size_t at = score.find("\"valid_flops\": ");
        ASSERT_NE(at, std::string::npos);
        score.insert(at + 15, "9");  // ten times and more
      });
  const BundleCheck failed = Failure(VerifyBundle(bundle, Registry::Builtin()));
  EXPECT_EQ(failed.name, "score run 7");
  EXPECT_NE(failed.detail.find("valid_flops"), std::string::npos)
      << failed.detail;
}

TEST_F(BundleTest, ResignedEpochAccuracyIsRefused) {
  const std::string bundle = Resealed("runs/7/run.json", [](std::string& run) {
    const size_t at = run.find("\"accuracy\": 0.77");
    ASSERT_NE(at, std::string::npos) << run;
    run.replace(at, 17, "\"accuracy\": 0.99");
  });
  const BundleCheck failed = Failure(VerifyBundle(bundle, Registry::Builtin()));
  EXPECT_EQ(failed.name, "score run 7");
  EXPECT_NE(failed.detail.find("run.json: epoch 2"), std::string::npos)
      << failed.detail;
}

TEST_F(BundleTest, TamperedInventoryIsRefusedNamingIt) {
  const std::string path = "runs/7/inventory.json";
  const std::string bundle = Edited(bundle_, path, [](std::string& text) {
    text = absl::StrReplaceAll(text, {{"Example CPU 9000", "Faster CPU 9999"}});
  });
  const BundleCheck failed = Failure(VerifyBundle(bundle, Registry::Builtin()));
  EXPECT_EQ(failed.name, "digests");
  EXPECT_NE(failed.detail.find(path), std::string::npos) << failed.detail;
}

TEST_F(BundleTest, ForeignReferencesAreRefused) {
  const std::string bundle =
      Resealed("references.json", [](std::string& text) { text = "[]"; });
  const BundleCheck failed = Failure(VerifyBundle(bundle, Registry::Builtin()));
  EXPECT_EQ(failed.name, "convergence");
}

TEST_F(BundleTest, TruncatedFileIsRefused) {
  for (size_t keep : {bundle_.size() / 2, bundle_.size() - 1, size_t{10}}) {
    const BundleCheck failed =
        Failure(VerifyBundle(bundle_.substr(0, keep), Registry::Builtin()));
    EXPECT_EQ(failed.name, "archive") << keep;
    EXPECT_NE(failed.detail.find("truncated"), std::string::npos)
        << keep << ": " << failed.detail;
  }
}

TEST_F(BundleTest, NotGzipIsRefused) {
  const BundleCheck failed =
      Failure(VerifyBundle("hello, not a bundle", Registry::Builtin()));
  EXPECT_EQ(failed.name, "archive");
}

// A gzip stream of `bytes` zero bytes, made without holding them.
std::string GzipOfZeros(int64_t bytes) {
  z_stream stream{};
  EXPECT_EQ(
      deflateInit2(&stream, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY),
      Z_OK);
  const std::string zeros(1 << 20, '\0');
  std::string out;
  char chunk[1 << 16];
  for (int64_t fed = 0; fed <= bytes;) {
    const bool last = fed == bytes;
    const size_t size =
        last
            ? 0
            : static_cast<size_t>(std::min<int64_t>(zeros.size(), bytes - fed));
    stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(zeros.data()));
    stream.avail_in = static_cast<uInt>(size);
    do {
      stream.next_out = reinterpret_cast<Bytef*>(chunk);
      stream.avail_out = sizeof(chunk);
      deflate(&stream, last ? Z_FINISH : Z_NO_FLUSH);
      out.append(chunk, sizeof(chunk) - stream.avail_out);
    } while (stream.avail_out == 0);
    if (last) break;
    fed += static_cast<int64_t>(size);
  }
  deflateEnd(&stream);
  return out;
}

TEST_F(BundleTest, DecompressionBombIsRefusedAtTheLimit) {
  const std::string bomb = GzipOfZeros(int64_t{1} << 30);  // 1 GiB of zeros
  ASSERT_LT(bomb.size(), 8u << 20);
  const BundleCheck failed = Failure(VerifyBundle(bomb, Registry::Builtin()));
  EXPECT_EQ(failed.name, "archive");
  EXPECT_NE(failed.detail.find("exceeds the limit"), std::string::npos)
      << failed.detail;
}

TEST_F(BundleTest, TooManyEntriesAreRefused) {
  VerifyOptions options;
  options.limits.max_entries = 3;
  const BundleCheck failed =
      Failure(VerifyBundle(bundle_, Registry::Builtin(), options));
  EXPECT_EQ(failed.name, "archive");
  EXPECT_NE(failed.detail.find("entries"), std::string::npos);
}

TEST_F(BundleTest, UnlistedFileIsRefused) {
  std::vector<ArchiveEntry> entries = Entries(bundle_);
  entries.push_back({"runs/7/extra.txt", "hello"});
  const BundleCheck failed = Failure(
      VerifyBundle(WriteArchive(entries).value_or(""), Registry::Builtin()));
  EXPECT_EQ(failed.name, "digests");
  EXPECT_NE(failed.detail.find("runs/7/extra.txt"), std::string::npos);
}

// The fixture run as a one-run submission with its claimed leaderboard
// row: Valid FLOPS divided by the convergence check's factor.
BundleContents SubmissionContents(double valid_flops_scale) {
  BundleContents contents = FixtureContents();
  const v1::Run& run = contents.runs.front().run;
  const ConvergenceResult check = CheckConvergence(
      {EpochsToTarget(run)}, /*global_batch=*/128, contents.references);
  v1::LeaderboardRow row;
  row.set_submission_id(run.submission_id());
  row.add_run_ids(run.id());
  row.set_runs(1);
  row.set_valid_flops(valid_flops_scale * run.score().valid_flops() /
                      check.factor);
  row.mutable_convergence()->set_verdict(ConvergenceVerdictName(check.verdict));
  row.mutable_convergence()->set_factor(check.factor);
  contents.submission = row;
  return contents;
}

TEST_F(BundleTest, SubmissionRowIsRecomputedFromItsRuns) {
  for (const double scale : {1.0, 2.0}) {
    absl::StatusOr<std::vector<ArchiveEntry>> files =
        BundleFiles(SubmissionContents(scale));
    ASSERT_TRUE(files.ok()) << files.status();
    const BundleReport report = VerifyBundle(Seal(*files), Registry::Builtin());
    ASSERT_FALSE(report.checks.empty());
    EXPECT_EQ(report.checks.back().name, "submission");
    EXPECT_EQ(report.ok(), scale == 1.0)
        << scale << ": " << report.checks.back().detail;
    if (scale != 1.0) {
      EXPECT_NE(report.checks.back().detail.find("submission.json claims"),
                std::string::npos);
    }
  }
}

TEST(BundleArchive, RefusesUnsafePaths) {
  EXPECT_FALSE(IsSafeArchivePath("../etc/passwd"));
  EXPECT_FALSE(IsSafeArchivePath("/abs"));
  EXPECT_FALSE(IsSafeArchivePath("a//b"));
  EXPECT_FALSE(IsSafeArchivePath("a/./b"));
  EXPECT_FALSE(IsSafeArchivePath(std::string(100, 'a')));
  EXPECT_TRUE(IsSafeArchivePath("runs/7/attempt-1/rank-0.mllog"));
  EXPECT_FALSE(WriteArchive({{"../x", "y"}}).ok());
  EXPECT_FALSE(WriteArchive({{"x", "1"}, {"x", "2"}}).ok());
}

TEST(BundleArchive, RoundTripsEntries) {
  const std::vector<ArchiveEntry> entries = {
      {"a.txt", "hello"}, {"dir/b.bin", std::string(1000, '\x01')}, {"e", ""}};
  absl::StatusOr<std::string> written = WriteArchive(entries);
  ASSERT_TRUE(written.ok()) << written.status();
  absl::StatusOr<std::vector<ArchiveEntry>> read = ReadArchive(*written);
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_EQ(read->size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ((*read)[i].path, entries[i].path);
    EXPECT_EQ((*read)[i].data, entries[i].data);
  }
}

}  // namespace
}  // namespace hpcai500
