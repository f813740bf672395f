#include "server/coordinator/maintenance.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace hpcai500 {

absl::Status Maintenance::Restore() {
  ASSIGN_OR_RETURN(window_, store_->LoadMaintenance());
  return absl::OkStatus();
}

absl::StatusOr<v1::MaintenanceWindow> Maintenance::Set(
    int64_t duration_ms, const std::string& reason, const std::string& by,
    int64_t now_ms) {
  if (duration_ms < 0 || duration_ms > kMaxMaintenanceMs) {
    return absl::InvalidArgumentError(
        absl::StrCat("maintenance: the duration must be 0 (end) to ",
                     kMaxMaintenanceMs / (24 * 3600 * 1000), " days, got ",
                     duration_ms, " ms"));
  }
  if (reason.size() > 1024) {
    return absl::InvalidArgumentError("reason: at most 1024 bytes");
  }
  v1::MaintenanceWindow window;
  if (duration_ms > 0) {
    window.set_until_ms(now_ms + duration_ms);
    window.set_started_ms(now_ms);
    window.set_reason(reason);
    window.set_started_by(by);
  }
  RETURN_IF_ERROR(store_->SaveMaintenance(window));
  window_ = window;
  return window;
}

v1::MaintenanceWindow Maintenance::Shown(int64_t now_ms) const {
  if (window_.until_ms() <= now_ms) return v1::MaintenanceWindow();
  return window_;
}

}  // namespace hpcai500
