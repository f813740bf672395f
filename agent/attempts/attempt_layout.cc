// The names of an attempt's folders and files, built and parsed back.
#include "agent/attempts/attempt_layout.h"

#include <utility>

#include "common/worker_args.h"
#include "common/worker_lease.h"

namespace hpcai500::agent {
namespace {

constexpr std::string_view kAttemptPrefix = "attempt-";
constexpr std::string_view kCheckpointRunPrefix = "run-";
constexpr std::string_view kRankPrefix = "rank-";

std::string_view Extension(RankFile file) {
  switch (file) {
    case RankFile::kEvents:
      return ".events";
    case RankFile::kStdout:
      return ".stdout";
    case RankFile::kStderr:
      return ".stderr";
    case RankFile::kPid:
      return ".pid";
    case RankFile::kAcked:
      return ".acked";
    case RankFile::kExit:
      return ".exit";
    case RankFile::kDone:
      return ".done";
  }
  return "";
}

// "attempt-<n>": the attempt's folder under its run's, in the workdir and
// under the checkpoint root alike.
std::string AttemptDirName(const v1::AttemptKey& key) {
  return std::string(kAttemptPrefix) + std::to_string(key.attempt());
}

// "123" -> 123; anything but 1 to 18 plain digits -> nullopt.
std::optional<int64_t> ParseDigits(std::string_view text) {
  if (text.empty() || text.size() > 18) return std::nullopt;
  int64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + (c - '0');
  }
  return value;
}

// ParseDigits of `text` without `prefix` and `suffix`; nullopt when they are
// missing or the number is above `max`.
std::optional<int64_t> ParseBetween(std::string_view text,
                                    std::string_view prefix,
                                    std::string_view suffix, int64_t max) {
  if (text.size() < prefix.size() + suffix.size() ||
      text.substr(0, prefix.size()) != prefix ||
      text.substr(text.size() - suffix.size()) != suffix) {
    return std::nullopt;
  }
  std::optional<int64_t> number = ParseDigits(
      text.substr(prefix.size(), text.size() - prefix.size() - suffix.size()));
  if (!number || *number > max) return std::nullopt;
  return number;
}

}  // namespace

AttemptLayout::AttemptLayout(std::string workdir)
    : workdir_(std::move(workdir)) {}

std::string AttemptLayout::RunsDir() const { return workdir_ + "/runs"; }

std::string AttemptLayout::AttemptDir(const v1::AttemptKey& key) const {
  return RunsDir() + "/" + std::to_string(key.run_id()) + "/" +
         AttemptDirName(key);
}

std::string AttemptLayout::CheckpointDir(std::string_view checkpoint_root,
                                         const v1::AttemptKey& key) {
  return std::string(checkpoint_root) + "/" +
         std::string(kCheckpointRunPrefix) + std::to_string(key.run_id()) +
         "/" + AttemptDirName(key);
}

std::string AttemptLayout::CheckpointPath(std::string_view checkpoint_root,
                                          const v1::AttemptKey& key,
                                          int64_t epoch) {
  return CheckpointDir(checkpoint_root, key) + "/" + CheckpointFileName(epoch);
}

std::string AttemptLayout::LeasePath(std::string_view attempt_dir) {
  return std::string(attempt_dir) + "/" + kLeaseFileName;
}

std::string AttemptLayout::RankPath(std::string_view attempt_dir, int rank,
                                    RankFile file) {
  return std::string(attempt_dir) + "/" + std::string(kRankPrefix) +
         std::to_string(rank) + std::string(Extension(file));
}

std::optional<int64_t> AttemptLayout::ParseRunDirName(std::string_view name) {
  return ParseDigits(name);
}

std::optional<int> AttemptLayout::ParseAttemptDirName(std::string_view name) {
  std::optional<int64_t> n =
      ParseBetween(name, kAttemptPrefix, "", kMaxAttempt);
  if (!n) return std::nullopt;
  return static_cast<int>(*n);
}

std::optional<int> AttemptLayout::ParseRankFileName(std::string_view name,
                                                    RankFile file) {
  std::optional<int64_t> r =
      ParseBetween(name, kRankPrefix, Extension(file), kMaxWorldSize - 1);
  if (!r) return std::nullopt;
  return static_cast<int>(*r);
}

}  // namespace hpcai500::agent
