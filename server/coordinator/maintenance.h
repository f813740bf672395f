// The coordinator's maintenance window (`hpcai500 maintenance`, after
// Slurm's MAINT reservations): an admin announces that hpcai500d will be
// stopped, say for an upgrade, until a given time. Until the window's end
// plus the node timeout no node is declared lost for silence, and agents,
// told the window's end (Registered, CoordinatorMessage.maintenance), do not
// fence their workers before then either (common/silence_deadline.h): the
// runs train on through the outage. The window is stored, since the restart
// it covers is the point.
//
// Not thread-safe: the Coordinator holds it under its mutex.
#ifndef HPCAI500_SERVER_COORDINATOR_MAINTENANCE_H_
#define HPCAI500_SERVER_COORDINATOR_MAINTENANCE_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "proto/hpcai500.pb.h"
#include "server/store/store.h"

namespace hpcai500 {

// The longest window: a forgotten one must not keep dead nodes for ever.
inline constexpr int64_t kMaxMaintenanceMs = 7LL * 24 * 3600 * 1000;

class Maintenance {
 public:
  // `store` is borrowed and must outlive this.
  explicit Maintenance(Store* store) : store_(store) {}

  // Loads the stored window (none when none is stored).
  absl::Status Restore();

  // With `duration_ms` > 0, starts a window from `now_ms` for that long
  // (replacing any other), recording `reason` and `by`; with 0, ends the
  // window (OK when none is on). Stores it and returns it (until_ms 0 once
  // ended). InvalidArgument for a negative duration, one over
  // kMaxMaintenanceMs or a reason over 1024 bytes; the store's error when
  // it cannot be stored, and then nothing changed.
  absl::StatusOr<v1::MaintenanceWindow> Set(int64_t duration_ms,
                                            const std::string& reason,
                                            const std::string& by,
                                            int64_t now_ms);

  // The window's end in Unix ms (0: none). It may have passed: silence is
  // still counted from it (SilenceDeadlineMs).
  int64_t until_ms() const { return window_.until_ms(); }

  // The window as shown at `now_ms`: until_ms 0 once it has ended.
  v1::MaintenanceWindow Shown(int64_t now_ms) const;

 private:
  // Constant after construction.
  Store* const store_;

  v1::MaintenanceWindow window_;  // until_ms 0: none
};

}  // namespace hpcai500

#endif  // HPCAI500_SERVER_COORDINATOR_MAINTENANCE_H_
