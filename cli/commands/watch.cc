// RunWatcher: `hpcai500 submit` and `hpcai500 watch`
// (cli/commands/watch.h).
#include "cli/commands/watch.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "cli/client/exit_codes.h"
#include "cli/text/run_text.h"

namespace hpcai500 {

RunWatcher::RunWatcher(const CommandContext& context)
    : client_(context.client), out_(context.out), err_(context.err) {}

int RunWatcher::Submit(const std::string& spec_source,
                       const std::string& spec_yaml, bool wait,
                       std::vector<v1::Run>* runs,
                       const std::string& request_id) {
  v1::SubmitRequest request;
  request.set_spec_yaml(spec_yaml);
  request.set_request_id(request_id);
  v1::SubmitResponse response;
  grpc::Status status = client_.Submit(&request, &response);
  if (!status.ok()) {
    return SubmitFailed(spec_source, request.request_id(), status);
  }
  if (response.replayed()) {
    err_ << "hpcai500: request " << request.request_id()
         << " was submitted before; its runs are these (nothing new "
            "stored)\n";
  }
  if (!response.suite().empty()) {
    err_ << "suite " << response.suite() << ": "
         << response.submission_ids_size() << " submissions, "
         << response.run_ids_size() << " runs\n";
  }
  for (int64_t run_id : response.run_ids()) out_ << run_id << "\n";
  out_.flush();
  if (!wait) return kExitOk;
  int worst = kExitOk;
  for (int64_t run_id : response.run_ids()) {
    v1::Run last;
    worst = std::max(worst, Watch(run_id, &last));
    if (runs != nullptr) runs->push_back(std::move(last));
  }
  return worst;
}

int RunWatcher::SubmitFailed(const std::string& spec_source,
                             const std::string& request_id,
                             const grpc::Status& status) {
  if (status.error_code() == grpc::StatusCode::INVALID_ARGUMENT ||
      status.error_code() == grpc::StatusCode::FAILED_PRECONDITION ||
      status.error_code() == grpc::StatusCode::ALREADY_EXISTS) {
    // A bad spec, a run the registered nodes could never hold, or a
    // request id that stands for another spec.
    err_ << "hpcai500: spec " << spec_source
         << " refused: " << status.error_message() << "\n";
    return kExitRefused;
  }
  if (IsRetryable(status)) {
    client_.ReportError("submit", status);
    err_ << "hpcai500: gave up after " << client_.options().retry.max_tries
         << " tries; the spec may have been stored: submit it again with "
            "--request-id "
         << request_id << " to get its runs without a second copy\n";
    return kExitUnavailable;
  }
  return client_.ReportError("submit", status);
}

int RunWatcher::Watch(int64_t run_id, v1::Run* last_seen) {
  v1::Run last;
  last.set_id(run_id);
  grpc::ClientContext context;
  std::unique_ptr<grpc::ClientReaderInterface<v1::RunUpdate>> reader =
      client_.WatchRun(run_id, &context);
  v1::RunUpdate update;
  bool seen_any = false;
  bool final = false;
  while (reader->Read(&update)) {
    // An update's log lines are what happened up to its snapshot of the run:
    // they come before the state they led to (a watch that begins after the
    // run was placed gets "queued: ..." in the log and state STARTING).
    for (const std::string& line : update.log()) out_ << line << "\n";
    if (update.has_run()) {
      if (!seen_any || update.run().state() != last.state()) {
        out_ << FormatRunState(run_id, update.run().state());
      }
      last = update.run();
      seen_any = true;
    }
    out_.flush();
    if (update.final()) final = true;
  }
  grpc::Status status = reader->Finish();
  if (last_seen != nullptr) *last_seen = last;
  if (final && seen_any) {
    out_ << FormatRunResult(last);
    out_.flush();
    return ExitCodeForRun(last);
  }
  if (!status.ok()) {
    return client_.ReportError(absl::StrCat("watch run ", run_id), status);
  }
  err_ << "hpcai500: watch run " << run_id << ": coordinator "
       << client_.options().coordinator
       << " closed the stream before the run ended\n";
  return kExitFailed;
}

}  // namespace hpcai500
