// The read-only view of the coordinator that the HTTP front end (JSON API,
// leaderboard page, /metrics) is served from. The coordinator implements it;
// tests pass a fake.
//
// Thread-safe: implementations must allow concurrent calls.
#ifndef HPCAI500_SERVER_HTTP_COORDINATOR_VIEW_H_
#define HPCAI500_SERVER_HTTP_COORDINATOR_VIEW_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/hpcai500.pb.h"

namespace hpcai500 {

class CoordinatorView {
 public:
  virtual ~CoordinatorView() = default;

  // NotFound when there is no such run.
  virtual absl::StatusOr<v1::Run> GetRun(int64_t run_id) = 0;
  // The newest runs matching every filter `request` sets, newest first:
  // request.limit() of them (0: 100, capped at 10,000). InvalidArgument
  // naming the field for a filter longer than 128 bytes, an unknown state,
  // a negative before_id, since_ms or until_ms, or until_ms not after
  // since_ms.
  virtual absl::StatusOr<v1::ListRunsResponse> ListRuns(
      const v1::ListRunsRequest& request) = 0;
  // Rows grouped by (workload, config), each group ranked 1.. on its own by
  // Valid FLOPS (unranked rows last): two workloads never share an ordering.
  // The page from request.offset() of request.limit() rows (0: all), with
  // the total before paging. InvalidArgument for an unknown workload or
  // config, a limit over 10,000 or a negative limit or offset.
  virtual absl::StatusOr<v1::LeaderboardResponse> Leaderboard(
      const v1::LeaderboardRequest& request) = 0;
  virtual absl::StatusOr<v1::ListNodesResponse> ListNodes() = 0;

  // Every rank's per-epoch numbers of a run (each epoch from the attempt
  // that ran it last) and its config's target. NotFound when there is no
  // such run. The default answers Unimplemented (views without events).
  virtual absl::StatusOr<v1::RunRanksResponse> RunRanks(int64_t run_id) {
    (void)run_id;
    return absl::UnimplementedError("per-rank epochs are not served here");
  }

  // What one rank of one attempt left: its stored event lines, or the tail
  // of its stderr the agent sent when it exited.
  enum class RankLog { kEvents, kStderr };
  // The text of `log` for (run, attempt, rank), lines ending in '\n'.
  // NotFound naming what is missing: the run, the attempt, the rank, or
  // (stderr) an exit not reported yet. The default answers Unimplemented.
  virtual absl::StatusOr<std::string> RankLogText(int64_t run_id,
                                                  int32_t attempt, int32_t rank,
                                                  RankLog log) {
    (void)run_id, (void)attempt, (void)rank, (void)log;
    return absl::UnimplementedError("rank logs are not served here");
  }
  // The change points of the run series that `request` asks for, newest
  // first (server/coordinator/series_changes.h); InvalidArgument naming
  // the field for a bad filter. The default answers Unimplemented.
  virtual absl::StatusOr<v1::ListChangesResponse> ListChanges(
      const v1::ListChangesRequest& request) {
    (void)request;
    return absl::UnimplementedError("change points are not served here");
  }
  // Prometheus text exposition format (version 0.0.4) of the coordinator's
  // gauges and counters.
  virtual std::string MetricsText() = 0;

  // OK while the coordinator can do its work; Unavailable naming what fails
  // (the store's writes) otherwise. Answers at once, taking no lock a
  // request holds: probes call it every few seconds.
  virtual absl::Status Health() { return absl::OkStatus(); }

  // Whether a request showing `bearer` (the token of an "Authorization:
  // Bearer" header, or of the hpcai500_token cookie; "" for none) may read.
  // Unauthenticated or PermissionDenied, with the reason, when not. Every
  // request may read unless a view says otherwise (hpcai500d's RunReads
  // asks AccessControl::AuthorizeRead).
  virtual absl::Status AuthorizeRead(absl::string_view bearer) {
    (void)bearer;
    return absl::OkStatus();
  }
};

}  // namespace hpcai500

#endif  // HPCAI500_SERVER_HTTP_COORDINATOR_VIEW_H_
