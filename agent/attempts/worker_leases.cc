// The lease files of the attempts' workers, granted and renewed.
#include "agent/attempts/worker_leases.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "agent/attempts/attempt_layout.h"
#include "agent/attempts/where.h"
#include "agent/system/files.h"
#include "common/log.h"
#include "common/worker_lease.h"

namespace hpcai500::agent {

namespace {

// Writes `deadline_ms` into the lease of `key` in `attempt_dir`; false, with
// a warning naming `consequence`, when it cannot.
bool WriteLease(const v1::AttemptKey& key, const std::string& attempt_dir,
                int64_t deadline_ms, const char* consequence) {
  absl::Status written = WriteFileAtomically(
      AttemptLayout::LeasePath(attempt_dir), FormatLease(deadline_ms));
  if (written.ok()) return true;
  LogWarning(absl::StrCat(Where(key), ": ", written.message(), " (",
                          consequence, ")"));
  return false;
}

}  // namespace

WorkerLeases::WorkerLeases(std::string workdir)
    : workdir_(std::move(workdir)) {}

void WorkerLeases::Grant(const v1::AttemptKey& key,
                         const std::string& attempt_dir) const {
  WriteLease(key, attempt_dir, deadline_ms_, "its workers run without a lease");
}

int WorkerLeases::Renew(const std::vector<v1::RunningAttempt>& running) const {
  const AttemptLayout layout(workdir_);
  int renewed = 0;
  for (const v1::RunningAttempt& attempt : running) {
    if (attempt.ranks_size() == 0) continue;
    if (WriteLease(attempt.key(), layout.AttemptDir(attempt.key()),
                   deadline_ms_, "not renewed: its workers may stop")) {
      ++renewed;
    }
  }
  return renewed;
}

}  // namespace hpcai500::agent
