// The coordinator as the CLI's commands call it: one ClientService stub,
// every call carrying the token and each unary call a deadline, lists read
// in pages, and one wording for a call that failed; and the channel that
// stub is opened on (ConnectToCoordinator).
//
// Not thread-safe: one command at a time (the error stream is shared).
#ifndef HPCAI500_CLI_CLIENT_COORDINATOR_CLIENT_H_
#define HPCAI500_CLI_CLIENT_COORDINATOR_CLIENT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "cli/client/retry.h"
#include "grpcpp/client_context.h"
#include "grpcpp/security/credentials.h"
#include "proto/hpcai500.grpc.pb.h"

namespace hpcai500 {

struct CommandOptions {
  std::string coordinator;  // "HOST:PORT", named in error messages
  std::string token;        // sent as "authorization: Bearer TOKEN" if set
  absl::TimeZone time_zone = absl::LocalTimeZone();
  absl::Duration rpc_timeout = absl::Seconds(30);  // not for watch
  RetryPolicy retry;  // for a submit whose answer may have been lost
  // Opens a fresh stub for each retry of a submit (gRPC keeps a channel
  // that failed to connect idle until a call asks, and fails the calls
  // meanwhile); null: the retries use the first stub.
  std::function<std::unique_ptr<v1::ClientService::StubInterface>()>
      connect_again;
};

// The stub of a new channel to `address` ("HOST:PORT") with `credentials`,
// with subchannels of its own (not shared with the process's other
// channels) and a short reconnect back-off (0.25 s growing to 1 s; gRPC's
// default grows to 2 min): a call on a fresh one tries to connect, so each
// of Submit's retries (CommandOptions::connect_again) reaches a coordinator
// that listens again. Connects lazily: never fails here.
std::unique_ptr<v1::ClientService::StubInterface> ConnectToCoordinator(
    const std::string& address,
    const std::shared_ptr<grpc::ChannelCredentials>& credentials);

class CoordinatorClient {
 public:
  // `stub` and `err` are borrowed for the life of the object.
  CoordinatorClient(v1::ClientService::StubInterface* stub,
                    CommandOptions options, std::ostream& err);

  const CommandOptions& options() const { return options_; }

  // Calls a unary RPC of the stub with the token and options().rpc_timeout.
  template <typename Request, typename Response>
  grpc::Status Unary(grpc::Status (v1::ClientService::StubInterface::*rpc)(
                         grpc::ClientContext*, const Request&, Response*),
                     const Request& request, Response* response) const;
  // Submit, made idempotent: sets a new request id (NewRequestId) when
  // *request has none, then sends it, and again with the same id after an
  // error that may have lost the answer, as options().retry says (each
  // retry announced on err). Returns the last try's status.
  grpc::Status Submit(v1::SubmitRequest* request,
                      v1::SubmitResponse* response) const;
  // GetRun for `run_id` into *run.
  grpc::Status GetRun(int64_t run_id, v1::Run* run) const;
  // Opens WatchRun for `run_id` on `context` (borrowed until the reader is
  // finished), adding the token; no deadline unless the caller set one.
  std::unique_ptr<grpc::ClientReaderInterface<v1::RunUpdate>> WatchRun(
      int64_t run_id, grpc::ClientContext* context) const;
  // Lists what `filter` matches, newest first, in pages of at most 100 runs
  // (paging back with before_id), handing each run to `take` until `take`
  // returns false, filter.limit() runs were taken (0: no bound) or none is
  // left. Returns the first failed RPC's status.
  grpc::Status ListRunsPaged(v1::ListRunsRequest filter,
                             const std::function<bool(v1::Run)>& take) const;
  // The rows `request` asks for (request.limit(), 0: all, from
  // request.offset()) and the total, asked for in pages of at most 1,000
  // rows. Returns the first failed RPC's status.
  grpc::Status LeaderboardPaged(const v1::LeaderboardRequest& request,
                                v1::LeaderboardResponse* board) const;
  // Prints one line to err naming `what` and the coordinator (unreachable,
  // or what it answered); returns kExitUnavailable when it could not be
  // reached or could not store (a retry may succeed), kExitFailed otherwise.
  int ReportError(absl::string_view what, const grpc::Status& status) const;

 private:
  // Adds the token, if any, to the call's metadata.
  void AddToken(grpc::ClientContext* context) const;
  // AddToken, and options().rpc_timeout from now as the deadline.
  void PrepareUnary(grpc::ClientContext* context) const;

  // Constant after construction.
  v1::ClientService::StubInterface* const stub_;
  const CommandOptions options_;
  std::ostream& err_;
};

template <typename Request, typename Response>
grpc::Status CoordinatorClient::Unary(
    grpc::Status (v1::ClientService::StubInterface::*rpc)(grpc::ClientContext*,
                                                          const Request&,
                                                          Response*),
    const Request& request, Response* response) const {
  grpc::ClientContext context;
  PrepareUnary(&context);
  return (stub_->*rpc)(&context, request, response);
}

}  // namespace hpcai500

#endif  // HPCAI500_CLI_CLIENT_COORDINATOR_CLIENT_H_
