// CoordinatorClient: the coordinator's stub with the token, deadlines,
// retried submits and paged lists (cli/client/coordinator_client.h).
#include "cli/client/coordinator_client.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "absl/strings/match.h"
#include "cli/client/exit_codes.h"
#include "common/error_cause.h"
#include "common/request_id.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/support/channel_arguments.h"

namespace hpcai500 {
namespace {

// ListRunsPaged asks for at most this many runs at a time: a page stays far
// below gRPC's default 4 MiB message limit.
constexpr int kListPageSize = 100;
// LeaderboardPaged asks for at most this many rows at a time: a whole board
// of tens of thousands of submissions would pass gRPC's 4 MiB message limit.
constexpr int kLeaderboardPageSize = 1000;
// The channel's reconnect back-off: the first wait after a refused
// connection and the most any wait grows to (ConnectToCoordinator).
constexpr int kFirstReconnectBackoffMs = 250;
constexpr int kMaxReconnectBackoffMs = 1000;

// How many items to ask for next: a page of `page_size`, or what is left of
// a bounded list when that is less (`remaining` 0: no bound).
int NextPageLimit(int remaining, int page_size) {
  return remaining > 0 ? std::min(remaining, page_size) : page_size;
}

// Whether the page that brought `count` items of the `asked` ends the list:
// it was short (the last page), or it brought the last of a bounded list,
// counting *remaining down (0: no bound).
bool EndsTheList(int count, int asked, int* remaining) {
  if (count < asked) return true;
  return *remaining > 0 && (*remaining -= count) == 0;
}

}  // namespace

std::unique_ptr<v1::ClientService::StubInterface> ConnectToCoordinator(
    const std::string& address,
    const std::shared_ptr<grpc::ChannelCredentials>& credentials) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, kFirstReconnectBackoffMs);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, kMaxReconnectBackoffMs);
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return v1::ClientService::NewStub(
      grpc::CreateCustomChannel(address, credentials, args));
}

CoordinatorClient::CoordinatorClient(v1::ClientService::StubInterface* stub,
                                     CommandOptions options, std::ostream& err)
    : stub_(stub), options_(std::move(options)), err_(err) {}

void CoordinatorClient::AddToken(grpc::ClientContext* context) const {
  if (!options_.token.empty()) {
    context->AddMetadata("authorization", "Bearer " + options_.token);
  }
}

void CoordinatorClient::PrepareUnary(grpc::ClientContext* context) const {
  AddToken(context);
  context->set_deadline(std::chrono::system_clock::now() +
                        absl::ToChronoMilliseconds(options_.rpc_timeout));
}

grpc::Status CoordinatorClient::Submit(v1::SubmitRequest* request,
                                       v1::SubmitResponse* response) const {
  if (request->request_id().empty()) request->set_request_id(NewRequestId());
  std::unique_ptr<v1::ClientService::StubInterface> fresh;
  int tries = 0;
  return CallWithRetries(
      options_.retry,
      [&] {
        v1::ClientService::StubInterface* stub = stub_;
        if (++tries > 1 && options_.connect_again) {
          fresh = options_.connect_again();
          stub = fresh.get();
        }
        grpc::ClientContext context;
        PrepareUnary(&context);
        return stub->Submit(&context, *request, response);
      },
      [&](int next_try, const grpc::Status& status, absl::Duration wait) {
        err_ << "hpcai500: submit: no answer from the coordinator at "
             << options_.coordinator << " (" << status.error_message()
             << "); sending request " << request->request_id() << " again in "
             << absl::FormatDuration(absl::Trunc(wait, absl::Milliseconds(10)))
             << " (try " << next_try << " of " << options_.retry.max_tries
             << ")\n";
      });
}

grpc::Status CoordinatorClient::GetRun(int64_t run_id, v1::Run* run) const {
  v1::GetRunRequest request;
  request.set_run_id(run_id);
  return Unary(&v1::ClientService::StubInterface::GetRun, request, run);
}

std::unique_ptr<grpc::ClientReaderInterface<v1::RunUpdate>>
CoordinatorClient::WatchRun(int64_t run_id,
                            grpc::ClientContext* context) const {
  AddToken(context);
  v1::WatchRunRequest request;
  request.set_run_id(run_id);
  return stub_->WatchRun(context, request);
}

int CoordinatorClient::ReportError(absl::string_view what,
                                   const grpc::Status& status) const {
  if (status.error_code() == grpc::StatusCode::UNAVAILABLE) {
    const std::string& message = status.error_message();
    // hpcai500d marks the answers its store could not make (nothing was
    // stored); the rest are the connection's.
    if (CauseOf(status) == v1::ErrorCause::CAUSE_STORE) {
      err_ << "hpcai500: " << what << ": the coordinator at "
           << options_.coordinator << " cannot store now: " << message
           << " (retry later)\n";
      return kExitUnavailable;
    }
    err_ << "hpcai500: " << what << ": cannot reach the coordinator at "
         << options_.coordinator << ": " << message << "\n";
    // A TLS handshake that failed fails again: no retry helps.
    return absl::StrContains(message, "andshake") ? kExitFailed
                                                  : kExitUnavailable;
  }
  err_ << "hpcai500: " << what << ": coordinator " << options_.coordinator
       << " answered: " << status.error_message() << "\n";
  return kExitFailed;
}

grpc::Status CoordinatorClient::ListRunsPaged(
    v1::ListRunsRequest filter,
    const std::function<bool(v1::Run)>& take) const {
  int remaining = filter.limit();  // 0: no bound
  while (true) {
    v1::ListRunsRequest page = filter;
    page.set_limit(NextPageLimit(remaining, kListPageSize));
    v1::ListRunsResponse response;
    grpc::Status status =
        Unary(&v1::ClientService::StubInterface::ListRuns, page, &response);
    if (!status.ok()) return status;
    const int count = response.runs_size();
    if (count == 0) return grpc::Status::OK;
    const int64_t oldest_id = response.runs(count - 1).id();
    for (v1::Run& run : *response.mutable_runs()) {
      if (!take(std::move(run))) return grpc::Status::OK;
    }
    if (EndsTheList(count, page.limit(), &remaining)) return grpc::Status::OK;
    filter.set_before_id(oldest_id);
  }
}

grpc::Status CoordinatorClient::LeaderboardPaged(
    const v1::LeaderboardRequest& request,
    v1::LeaderboardResponse* board) const {
  v1::LeaderboardRequest page = request;
  int remaining = request.limit();  // 0: every row
  while (true) {
    page.set_limit(NextPageLimit(remaining, kLeaderboardPageSize));
    v1::LeaderboardResponse response;
    grpc::Status status =
        Unary(&v1::ClientService::StubInterface::Leaderboard, page, &response);
    if (!status.ok()) return status;
    board->set_total(response.total());
    board->set_throughput_cv_limit(response.throughput_cv_limit());
    board->set_epochs_to_target_cv_limit(response.epochs_to_target_cv_limit());
    const int count = response.rows_size();
    for (v1::LeaderboardRow& row : *response.mutable_rows()) {
      *board->add_rows() = std::move(row);
    }
    if (EndsTheList(count, page.limit(), &remaining)) return grpc::Status::OK;
    page.set_offset(page.offset() + count);
  }
}

}  // namespace hpcai500
