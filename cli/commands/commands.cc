// Commands: the CLI's commands of one request, answered with text or JSON
// (cli/commands/commands.h).
#include "cli/commands/commands.h"

#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "cli/text/cluster_text.h"
#include "cli/text/format.h"
#include "cli/text/history.h"
#include "cli/text/leaderboard_text.h"
#include "cli/text/run_text.h"

namespace hpcai500 {
namespace {

// What `list` and `history` show without --limit (the coordinator's default
// too).
constexpr int kDefaultListLimit = 100;

// `filter` with its limit, or kDefaultListLimit without one.
v1::ListRunsRequest Bounded(const v1::ListRunsRequest& filter) {
  v1::ListRunsRequest bounded = filter;
  if (bounded.limit() <= 0) bounded.set_limit(kDefaultListLimit);
  return bounded;
}

}  // namespace

Commands::Commands(const CommandContext& context)
    : client_(context.client), out_(context.out), err_(context.err) {}

template <typename Request, typename Response, typename Format>
int Commands::Answer(absl::string_view what,
                     grpc::Status (v1::ClientService::StubInterface::*rpc)(
                         grpc::ClientContext*, const Request&, Response*),
                     const Request& request, bool json, Format format) {
  Response response;
  grpc::Status status = client_.Unary(rpc, request, &response);
  if (!status.ok()) return client_.ReportError(what, status);
  return json ? PrintJson(response) : Print(format(response));
}

int Commands::Print(const std::string& text) {
  out_ << text;
  return kExitOk;
}

int Commands::PrintJson(const google::protobuf::Message& message) {
  absl::StatusOr<std::string> json = FormatJson(message);
  if (!json.ok()) {
    err_ << "hpcai500: " << json.status().message() << "\n";
    return kExitFailed;
  }
  return Print(*json);
}

int Commands::List(const v1::ListRunsRequest& filter, bool json) {
  std::vector<v1::Run> runs;
  grpc::Status status =
      client_.ListRunsPaged(Bounded(filter), [&](v1::Run run) {
        runs.push_back(std::move(run));
        return true;
      });
  if (!status.ok()) return client_.ReportError("list", status);
  if (json) {
    v1::ListRunsResponse listed;
    for (v1::Run& run : runs) *listed.add_runs() = std::move(run);
    return PrintJson(listed);
  }
  return Print(FormatRunList(runs, client_.options().time_zone));
}

int Commands::Show(int64_t run_id, bool json) {
  v1::GetRunRequest request;
  request.set_run_id(run_id);
  return Answer(absl::StrCat("show run ", run_id),
                &v1::ClientService::StubInterface::GetRun, request, json,
                [&](const v1::Run& run) {
                  return FormatRunSummary(run, client_.options().time_zone);
                });
}

int Commands::Cancel(int64_t run_id) {
  v1::CancelRunRequest request;
  request.set_run_id(run_id);
  return Answer(absl::StrCat("cancel run ", run_id),
                &v1::ClientService::StubInterface::CancelRun, request,
                /*json=*/false, [&](const v1::CancelRunResponse& response) {
                  return FormatRunState(run_id, response.state());
                });
}

int Commands::Hold(int64_t run_id, bool hold) {
  const auto format = [&](const v1::Run& run) {
    return FormatHeld(run_id, hold, run);
  };
  if (hold) {
    v1::HoldRunRequest request;
    request.set_run_id(run_id);
    return Answer(absl::StrCat("hold run ", run_id),
                  &v1::ClientService::StubInterface::HoldRun, request,
                  /*json=*/false, format);
  }
  v1::ReleaseRunRequest request;
  request.set_run_id(run_id);
  return Answer(absl::StrCat("release run ", run_id),
                &v1::ClientService::StubInterface::ReleaseRun, request,
                /*json=*/false, format);
}

int Commands::Nodes(bool json) {
  return Answer("nodes", &v1::ClientService::StubInterface::ListNodes,
                v1::ListNodesRequest(), json,
                [&](const v1::ListNodesResponse& nodes) {
                  return FormatNodes(nodes, client_.options().time_zone);
                });
}

int Commands::Drain(const std::string& name, const std::string& reason) {
  v1::DrainNodeRequest request;
  request.set_name(name);
  request.set_reason(reason);
  return Answer(absl::StrCat("drain node ", name),
                &v1::ClientService::StubInterface::DrainNode, request,
                /*json=*/false, FormatDrained);
}

int Commands::Resume(const std::string& name) {
  v1::ResumeNodeRequest request;
  request.set_name(name);
  return Answer(absl::StrCat("resume node ", name),
                &v1::ClientService::StubInterface::ResumeNode, request,
                /*json=*/false, FormatResumed);
}

int Commands::Maintenance(bool json) {
  v1::ListNodesResponse nodes;
  grpc::Status status =
      client_.Unary(&v1::ClientService::StubInterface::ListNodes,
                    v1::ListNodesRequest(), &nodes);
  if (!status.ok()) return client_.ReportError("maintenance", status);
  return json ? PrintJson(nodes.maintenance())
              : Print(FormatMaintenance(nodes.maintenance(),
                                        client_.options().time_zone));
}

int Commands::SetMaintenance(int64_t duration_ms, const std::string& reason) {
  v1::SetMaintenanceRequest request;
  request.set_duration_ms(duration_ms);
  request.set_reason(reason);
  const absl::TimeZone zone = client_.options().time_zone;
  return Answer(duration_ms > 0 ? "maintenance start" : "maintenance end",
                &v1::ClientService::StubInterface::SetMaintenance, request,
                /*json=*/false, [&](const v1::MaintenanceWindow& window) {
                  return FormatMaintenance(window, zone);
                });
}

int Commands::Queues(bool json) {
  return Answer("queues", &v1::ClientService::StubInterface::ListQueues,
                v1::ListQueuesRequest(), json, FormatQueues);
}

int Commands::Invalidate(int64_t run_id, const std::string& reason) {
  v1::InvalidateRunRequest request;
  request.set_run_id(run_id);
  request.set_reason(reason);
  return Answer(absl::StrCat("invalidate run ", run_id),
                &v1::ClientService::StubInterface::InvalidateRun, request,
                /*json=*/false, FormatInvalidated);
}

int Commands::Audit(int limit, bool json) {
  v1::ListAuditRequest request;
  request.set_limit(limit);
  return Answer("audit", &v1::ClientService::StubInterface::ListAudit, request,
                json, [&](const v1::ListAuditResponse& audit) {
                  return FormatAudit(audit, client_.options().time_zone);
                });
}

int Commands::Leaderboard(const v1::LeaderboardRequest& request, bool json) {
  v1::LeaderboardResponse response;
  grpc::Status status = client_.LeaderboardPaged(request, &response);
  if (!status.ok()) return client_.ReportError("leaderboard", status);
  if (json) return PrintJson(response);
  return Print(FormatLeaderboard(response, request.offset()));
}

int Commands::History(const v1::ListRunsRequest& filter, bool json) {
  const int64_t now_ms = absl::ToUnixMillis(absl::Now());
  std::vector<HistoryRow> rows;
  grpc::Status status =
      client_.ListRunsPaged(Bounded(filter), [&](v1::Run run) {
        rows.push_back(HistoryRowOf(run, now_ms));
        return true;
      });
  if (!status.ok()) return client_.ReportError("history", status);
  return Print(json ? HistoryJson(rows)
                    : FormatHistoryTable(rows, client_.options().time_zone));
}

int Commands::PromoteBaseline(int64_t run_id) {
  v1::PromoteBaselineRequest request;
  request.set_run_id(run_id);
  v1::Baseline baseline;
  grpc::Status status = client_.Unary(
      &v1::ClientService::StubInterface::PromoteBaseline, request, &baseline);
  if (!status.ok()) {
    return client_.ReportError(absl::StrCat("promote run ", run_id), status);
  }
  return Print(FormatPromoted(baseline));
}

}  // namespace hpcai500
