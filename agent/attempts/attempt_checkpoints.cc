// The checkpoint folders around an attempt: found for the reserve answer,
// linked in for a resume, removed after a success.
#include "agent/attempts/attempt_checkpoints.h"

#include <cstdint>
#include <filesystem>
#include <map>
#include <system_error>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "agent/attempts/attempt_layout.h"
#include "agent/attempts/where.h"
#include "agent/system/files.h"
#include "common/checkpoint_manifest.h"
#include "common/log.h"

namespace hpcai500::agent {

namespace {

namespace fs = std::filesystem;

// At most this many found checkpoints are reported (a worker keeps two).
constexpr size_t kMaxFound = 8;

// The manifests in `dir` of epochs above `after`, by epoch.
std::map<int64_t, std::string> ManifestsAfter(const std::string& dir,
                                              int64_t after) {
  std::map<int64_t, std::string> found;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end;
       it.increment(ec)) {
    const int64_t epoch = EpochOfManifestName(it->path().filename().string());
    if (epoch > after) found[epoch] = it->path().string();
  }
  while (found.size() > kMaxFound) found.erase(found.begin());
  return found;
}

// The manifest at `path` with the digest of the files it names.
v1::FoundCheckpoint Examine(const std::string& path, int32_t attempt) {
  v1::FoundCheckpoint found;
  found.set_attempt(attempt);
  found.set_manifest(ReadFileHead(path, kMaxManifestBytes + 1));
  CheckpointManifest manifest;
  std::string error;
  if (!ParseCheckpointManifest(found.manifest(), &manifest, &error)) {
    found.set_manifest(found.manifest().substr(0, 4096));
    found.set_error(absl::StrCat(path, ": ", error));
    return found;
  }
  const fs::path dir = fs::path(path).parent_path();
  std::vector<CheckpointManifest::File> on_disk;
  for (const CheckpointManifest::File& file : manifest.files) {
    CheckpointManifest::File read{"", file.name};
    if (!Sha256OfFile((dir / file.name).string(), &read.sha256, &error)) {
      found.set_error(error);
      return found;
    }
    on_disk.push_back(std::move(read));
  }
  found.set_digest(CheckpointDigest(on_disk));
  return found;
}

}  // namespace

void AddFoundCheckpoints(const std::string& checkpoint_root,
                         const v1::Assignment& a, v1::PortReserved* reply) {
  const int32_t probed = a.probe_checkpoints_attempt();
  if (probed < 1 || probed >= a.key().attempt()) return;
  v1::AttemptKey source = a.key();
  source.set_attempt(probed);
  const std::string dir = AttemptLayout::CheckpointDir(checkpoint_root, source);
  for (const auto& [epoch, path] : ManifestsAfter(dir, a.resume_from_epoch())) {
    *reply->add_found_checkpoints() = Examine(path, probed);
    LogInfo(absl::StrCat(Where(a.key()), ": found attempt ", probed,
                         "'s checkpoint of epoch ", epoch, " on disk; ",
                         "the coordinator checks it"));
  }
}

void LinkResumeSource(const v1::AttemptKey& key, const AttemptPlan& plan) {
  if (plan.resume_source.empty()) return;
  const fs::path source(plan.resume_source);
  absl::Status linked = LinkOrCopyFile(
      plan.resume_source,
      absl::StrCat(plan.checkpoint_dir, "/", source.filename().string()));
  // The ranks' parts: checkpoint-epoch-NNNNNN.rank-R.pt beside it.
  const std::string parts = absl::StrCat(source.stem().string(), ".rank-");
  std::error_code ec;
  for (fs::directory_iterator it(source.parent_path(), ec), end;
       linked.ok() && !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!absl::StartsWith(name, parts)) continue;
    linked = LinkOrCopyFile(it->path().string(),
                            absl::StrCat(plan.checkpoint_dir, "/", name));
  }
  if (linked.ok()) {
    LogInfo(absl::StrCat(Where(key), ": resuming from ", plan.resume_source));
  } else if (absl::IsNotFound(linked)) {
    LogWarning(absl::StrCat(Where(key), ": no checkpoint to resume from at ",
                            plan.resume_source, "; starting without it"));
  } else {
    LogWarning(absl::StrCat(Where(key), ": ", linked.message(),
                            "; starting without it"));
  }
}

void RemoveRunCheckpoints(const v1::AttemptKey& key,
                          const std::string& attempt_dir) {
  const std::string dir =
      std::filesystem::path(attempt_dir).parent_path().string();
  std::error_code ec;
  const std::uintmax_t removed = std::filesystem::remove_all(dir, ec);
  if (ec) {
    LogWarning(absl::StrCat(Where(key), ": cannot remove checkpoints ", dir,
                            ": ", ec.message()));
  } else if (removed > 0) {
    LogInfo(
        absl::StrCat(Where(key), ": succeeded; removed its checkpoints ", dir));
  }
}

}  // namespace hpcai500::agent
