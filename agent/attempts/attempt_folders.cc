// The workdir's attempt folders, listed by AttemptLayout's names.
#include "agent/attempts/attempt_folders.h"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <system_error>

#include "agent/attempts/attempt_layout.h"

namespace hpcai500::agent {
namespace {

namespace fs = std::filesystem;

std::set<int> RanksWithPidFiles(const fs::path& attempt_dir) {
  std::set<int> ranks;
  std::error_code ec;
  for (const fs::directory_entry& file :
       fs::directory_iterator(attempt_dir, ec)) {
    if (std::optional<int> rank = AttemptLayout::ParseRankFileName(
            file.path().filename().string(), RankFile::kPid)) {
      ranks.insert(*rank);
    }
  }
  return ranks;
}

}  // namespace

std::vector<AttemptFolder> FindAttemptFolders(const std::string& workdir) {
  const fs::path runs = AttemptLayout(workdir).RunsDir();
  std::vector<AttemptFolder> folders;
  std::error_code ec;
  if (!fs::is_directory(runs, ec)) return folders;
  for (const fs::directory_entry& run_dir : fs::directory_iterator(runs, ec)) {
    std::optional<int64_t> run_id =
        AttemptLayout::ParseRunDirName(run_dir.path().filename().string());
    if (!run_id || !run_dir.is_directory(ec)) continue;
    for (const fs::directory_entry& attempt_dir :
         fs::directory_iterator(run_dir.path(), ec)) {
      std::optional<int> number = AttemptLayout::ParseAttemptDirName(
          attempt_dir.path().filename().string());
      if (!number) continue;
      AttemptFolder& folder = folders.emplace_back();
      folder.key.set_run_id(*run_id);
      folder.key.set_attempt(*number);
      folder.ranks_with_pid_files = RanksWithPidFiles(attempt_dir.path());
    }
  }
  return folders;
}

}  // namespace hpcai500::agent
