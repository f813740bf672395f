// hpcai500d's change points over every run series (docs/design.md "Change
// points"): each series' history (methodology/series_changes.h), searched
// in full once when the coordinator starts and then only in its last
// segments as each run ends, so that a request reads what is kept instead
// of searching 10,000 runs. Read by `hpcai500 changes` (ListChanges),
// /api/v1/changes and `regress`; a change it reveals in the bad direction
// goes to the webhook.
//
// Thread-safe: the histories are guarded by mu_; a search runs under it
// (milliseconds per run end; Load's whole-history searches before the
// coordinator serves).
#ifndef HPCAI500_SERVER_COORDINATOR_SERIES_CHANGES_H_
#define HPCAI500_SERVER_COORDINATOR_SERIES_CHANGES_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "methodology/change_points.h"
#include "methodology/series_changes.h"
#include "proto/hpcai500.pb.h"
#include "server/store/store.h"

namespace hpcai500 {

class SeriesChanges {
 public:
  explicit SeriesChanges(const ChangePointOptions& options = {});

  // Replaces every history with the good runs `store` (borrowed for the
  // call) holds, grouped by series, and searches each. The store's error.
  absl::Status Load(Store& store);
  // A run ended: when it belongs in a history (IsChangeHistoryRun), appends
  // it to its series' and returns the change points it revealed.
  std::vector<v1::ChangePoint> Add(const v1::Run& run);
  // The change points `request` asks for, newest run first:
  // InvalidArgument naming the field for a negative since_ms or a name or
  // series over 4,096 bytes.
  absl::StatusOr<v1::ListChangesResponse> List(
      const v1::ListChangesRequest& request) const;

 private:
  // Constant after construction.
  const ChangePointOptions options_;

  mutable absl::Mutex mu_;
  // By RegressSeriesKey.
  std::map<std::string, std::unique_ptr<SeriesChangeHistory>> series_
      ABSL_GUARDED_BY(mu_);
};

// Whether `change` matches `request`'s filters (name, series, since_ms
// against the run that started it, regressions_only).
bool ChangeMatches(const v1::ChangePoint& change,
                   const v1::ListChangesRequest& request);

}  // namespace hpcai500

#endif  // HPCAI500_SERVER_COORDINATOR_SERIES_CHANGES_H_
