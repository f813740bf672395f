// The read side of hpcai500d: what the pages, the JSON API and the CLI read
// of runs (one run, lists, every rank's epochs, rank logs, the leaderboard),
// from the store, with the runs the coordinator holds in memory in place of
// their stored rows; nodes and /metrics as the coordinator sees them now.
// Apart from the Coordinator, which keeps only what changes under its lock.
//
// Thread-safe: RunReads holds nothing of its own; the store serialises its
// calls and LiveRuns implementations take their own lock.
#ifndef HPCAI500_SERVER_COORDINATOR_RUN_READS_H_
#define HPCAI500_SERVER_COORDINATOR_RUN_READS_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/events.h"
#include "methodology/registry.h"
#include "proto/hpcai500.pb.h"
#include "server/http/coordinator_view.h"
#include "server/store/leaderboard.h"
#include "server/store/store.h"

namespace hpcai500 {

// What only the coordinator knows now (server/coordinator/coordinator.h).
class LiveRuns {
 public:
  virtual ~LiveRuns() = default;
  // The run as held in memory (newer than its stored row), or nullopt when
  // it is not held.
  virtual std::optional<v1::Run> LiveRun(int64_t run_id) = 0;
  // Replaces each of `runs` held in memory by that copy, in one lock.
  virtual void ReplaceWithLive(
      google::protobuf::RepeatedPtrField<v1::Run>& runs) = 0;
  virtual absl::StatusOr<v1::ListNodesResponse> ListNodes() = 0;
  virtual std::string MetricsText() = 0;
  // The change points `request` asks for (SeriesChanges::List); the
  // default answers Unimplemented.
  virtual absl::StatusOr<v1::ListChangesResponse> ListChanges(
      const v1::ListChangesRequest& request) {
    (void)request;
    return absl::UnimplementedError("change points are not kept here");
  }
};

class RunReads final : public CoordinatorView {
 public:
  // Who may read the pages and the JSON API: the status for a request
  // showing `bearer` (CoordinatorView::AuthorizeRead).
  using ReadRule = std::function<absl::Status(absl::string_view bearer)>;
  // Metrics kept outside the coordinator (Prometheus text), e.g. the failed
  // TLS handshakes (server/auth/tls_failures.h).
  using MoreMetrics = std::function<std::string()>;

  // `store`, `registry` and `live` are borrowed and must outlive this.
  // Without `may_read`, every request may read. /metrics is the
  // coordinator's, then `more_metrics`' when set.
  RunReads(Store* store, const Registry* registry, LiveRuns* live,
           ReadRule may_read = nullptr, MoreMetrics more_metrics = nullptr,
           SpreadLimits spread = {});

  // CoordinatorView (server/http/coordinator_view.h says what each answers).
  absl::StatusOr<v1::Run> GetRun(int64_t run_id) override;
  absl::StatusOr<v1::ListRunsResponse> ListRuns(
      const v1::ListRunsRequest& request) override;
  absl::StatusOr<v1::LeaderboardResponse> Leaderboard(
      const v1::LeaderboardRequest& request) override;
  absl::StatusOr<v1::ListNodesResponse> ListNodes() override;
  absl::StatusOr<v1::RunRanksResponse> RunRanks(int64_t run_id) override;
  absl::StatusOr<std::string> RankLogText(int64_t run_id, int32_t attempt,
                                          int32_t rank, RankLog log) override;
  std::string MetricsText() override;
  absl::StatusOr<v1::ListChangesResponse> ListChanges(
      const v1::ListChangesRequest& request) override;
  // Unavailable while the store's writes fail, since when and why.
  absl::Status Health() override;
  absl::Status AuthorizeRead(absl::string_view bearer) override;

 private:
  Store* const store_;
  const Registry* const registry_;
  LiveRuns* const live_;
  const ReadRule may_read_;
  const MoreMetrics more_metrics_;
  const SpreadLimits spread_;
};

// Run `run_id` as `live` holds it in memory (newer than its stored row),
// else as `store` has it. NotFound.
absl::StatusOr<v1::Run> CurrentRun(LiveRuns& live, Store& store,
                                   int64_t run_id);

// The stored lines of attempt `attempt` of run `run_id` (only rank `rank`'s
// when set) that parse, in the store's order; rows refused at intake are
// left out.
absl::StatusOr<std::vector<EventLine>> StoredEventLines(
    Store& store, int64_t run_id, int32_t attempt,
    std::optional<int32_t> rank = std::nullopt);

}  // namespace hpcai500

#endif  // HPCAI500_SERVER_COORDINATOR_RUN_READS_H_
