// `hpcai500 export`, `verify` and `replay`: see bundle_commands.h.
#include "cli/commands/bundle_commands.h"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/client/exit_codes.h"
#include "cli/commands/watch.h"
#include "methodology/spec.h"
#include "nlohmann/json.hpp"
#include "proto/bundle.grpc.pb.h"

namespace hpcai500 {
namespace {

// Writes `data` to `path` through a temporary file beside it, so that a
// failed write never leaves half a bundle under the name.
absl::Status WriteWholeFile(const std::string& path, const std::string& data) {
  const std::string partial = path + ".partial";
  {
    std::ofstream out(partial, std::ios::binary | std::ios::trunc);
    out.write(data.data(), static_cast<std::streamsize>(data.size()));
    out.close();
    if (!out) {
      std::remove(partial.c_str());
      return absl::UnavailableError(absl::StrCat("cannot write '", path, "'"));
    }
  }
  if (std::rename(partial.c_str(), path.c_str()) != 0) {
    std::remove(partial.c_str());
    return absl::UnavailableError(absl::StrCat("cannot write '", path, "'"));
  }
  return absl::OkStatus();
}

// One row of replay's table: `what`, the bundle's and the replay's values
// (%.6g) and their ratio replay / bundle ("-" when the bundle's is 0).
std::string CompareLine(const char* what, double bundled, double replayed) {
  return absl::StrFormat(
      "%-14s %14.6g %14.6g %8s\n", what, bundled, replayed,
      bundled == 0 ? "-" : absl::StrFormat("%.3f", replayed / bundled));
}

}  // namespace

absl::StatusOr<std::string> ReadBundleFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(
        absl::StrCat("cannot read bundle file '", path, "'"));
  }
  std::string data;
  char buffer[1 << 16];
  while (in.read(buffer, sizeof(buffer)) || in.gcount() > 0) {
    data.append(buffer, static_cast<size_t>(in.gcount()));
    if (static_cast<int64_t>(data.size()) > kMaxBundleFileBytes) {
      return absl::InvalidArgumentError(
          absl::StrCat("bundle file '", path, "' is larger than ",
                       kMaxBundleFileBytes, " bytes"));
    }
  }
  if (in.bad()) {
    return absl::NotFoundError(
        absl::StrCat("cannot read bundle file '", path, "'"));
  }
  return data;
}

std::string BundleReportText(const BundleReport& report) {
  size_t width = 0;
  for (const BundleCheck& check : report.checks) {
    width = std::max(width, check.name.size());
  }
  std::string text;
  for (const BundleCheck& check : report.checks) {
    absl::StrAppendFormat(&text, "%-4s  %-*s  %s\n", check.ok ? "ok" : "FAIL",
                          static_cast<int>(width), check.name, check.detail);
  }
  if (const BundleCheck* failed = report.FirstFailure()) {
    absl::StrAppend(&text, "not verified: ", failed->name, "\n");
  } else if (report.manifest.has_value()) {
    absl::StrAppend(&text, "verified: ", report.manifest->subject,
                    " signed by site ", report.manifest->site_key, "\n");
  }
  return text;
}

std::string BundleReportJson(const BundleReport& report) {
  nlohmann::json checks = nlohmann::json::array();
  for (const BundleCheck& check : report.checks) {
    checks.push_back(
        {{"name", check.name}, {"ok", check.ok}, {"detail", check.detail}});
  }
  nlohmann::json out = {{"ok", report.ok()}, {"checks", checks}};
  if (report.manifest.has_value()) {
    out["subject"] = report.manifest->subject;
    out["site_key"] = report.manifest->site_key;
  }
  return out.dump(2) + "\n";
}

BundleCommands::BundleCommands(const CommandContext& context)
    : context_(context) {}

int BundleCommands::Export(int64_t id, bool submission,
                           const std::string& out_path,
                           const TlsFileFlags& tls) {
  absl::StatusOr<TlsFiles> files = LoadClientTlsFiles(tls);
  if (!files.ok()) {
    context_.err << "hpcai500: " << files.status().message() << "\n";
    return kExitNoInput;
  }
  const CommandOptions& options = context_.client.options();
  grpc::ChannelArguments channel_args;
  channel_args.SetMaxReceiveMessageSize(static_cast<int>(kMaxBundleFileBytes));
  std::unique_ptr<v1::BundleService::Stub> stub =
      v1::BundleService::NewStub(grpc::CreateCustomChannel(
          options.coordinator, CoordinatorChannelCredentials(*files),
          channel_args));
  grpc::ClientContext call;
  if (!options.token.empty()) {
    call.AddMetadata("authorization", "Bearer " + options.token);
  }
  call.set_deadline(std::chrono::system_clock::now() +
                    absl::ToChronoMilliseconds(options.rpc_timeout));
  v1::ExportBundleRequest request;
  if (submission) {
    request.set_submission_id(id);
  } else {
    request.set_run_id(id);
  }
  v1::ExportBundleResponse response;
  const grpc::Status status = stub->ExportBundle(&call, request, &response);
  if (!status.ok()) {
    return context_.client.ReportError(
        absl::StrCat("export of ", submission ? "submission " : "run ", id),
        status);
  }
  if (absl::Status written = WriteWholeFile(out_path, response.bundle());
      !written.ok()) {
    context_.err << "hpcai500: " << written.message() << "\n";
    return kExitFailed;
  }
  context_.out << out_path << ": " << response.subject() << ", "
               << response.bundle().size() << " bytes, signed by site "
               << response.site_key() << "\n";
  return kExitOk;
}

int BundleCommands::Verify(const std::string& path, bool json) {
  absl::StatusOr<std::string> bytes = ReadBundleFile(path);
  if (!bytes.ok()) {
    context_.err << "hpcai500: " << bytes.status().message() << "\n";
    return kExitNoInput;
  }
  const BundleReport report = VerifyBundle(*bytes, Registry::Builtin());
  context_.out << (json ? BundleReportJson(report) : BundleReportText(report));
  return report.ok() ? kExitOk : kExitFailed;
}

int BundleCommands::Replay(const std::string& path) {
  absl::StatusOr<std::string> bytes = ReadBundleFile(path);
  if (!bytes.ok()) {
    context_.err << "hpcai500: " << bytes.status().message() << "\n";
    return kExitNoInput;
  }
  const BundleReport report = VerifyBundle(*bytes, Registry::Builtin());
  if (const BundleCheck* failed = report.FirstFailure()) {
    context_.err << "hpcai500: '" << path << "' does not verify ("
                 << failed->name << ": " << failed->detail
                 << "); nothing replayed\n";
    return kExitFailed;
  }
  const v1::Run& bundled = report.contents->runs.front().run;
  v1::RunSpec spec = bundled.spec();
  spec.set_repetitions(1);
  spec.clear_sweep();
  spec.clear_scaling();
  std::vector<v1::Run> runs;
  const int code = RunWatcher(context_).Submit(
      absl::StrCat("'", path, "' (run ", bundled.id(), "'s spec)"),
      RunSpecToYaml(spec), /*wait=*/true, &runs);
  if (runs.empty() || !runs.front().has_score()) return code;
  const v1::Score& before = bundled.score();
  const v1::Score& after = runs.front().score();
  std::string table = absl::StrFormat(
      "%-14s %14s %14s %8s\n", "", absl::StrCat("bundle run ", bundled.id()),
      absl::StrCat("replay run ", runs.front().id()), "ratio");
  table += CompareLine("quality", before.quality(), after.quality());
  table += CompareLine("train seconds", before.train_seconds(),
                       after.train_seconds());
  table += CompareLine("FLOPS", before.flops(), after.flops());
  table +=
      CompareLine("Valid FLOPS", before.valid_flops(), after.valid_flops());
  context_.out << table;
  return code;
}

}  // namespace hpcai500
