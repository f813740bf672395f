#include "cli/cli.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "cli/command_table.h"
#include "cli/coordinator_client.h"
#include "cli/regress_flags.h"
#include "common/suite.h"
#include "common/tls_files.h"
#include "common/token.h"

namespace hpcai500 {
namespace {

// Specs are a screenful of YAML; anything far bigger is a wrong file.
constexpr size_t kMaxFileBytes = 1 << 20;

absl::StatusOr<std::string> ReadFileText(const std::string& path,
                                         const char* what) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) {
    return absl::NotFoundError(absl::StrCat("cannot read ", what, " '", path,
                                            "': ", std::strerror(errno)));
  }
  std::string text;
  char buffer[8192];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), file)) > 0 &&
         text.size() <= kMaxFileBytes) {
    text.append(buffer, n);
  }
  int read_errno = std::ferror(file) ? errno : 0;
  std::fclose(file);
  if (read_errno != 0) {
    return absl::NotFoundError(absl::StrCat("cannot read ", what, " '", path,
                                            "': ", std::strerror(read_errno)));
  }
  if (text.size() > kMaxFileBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, " '", path, "' is larger than ", kMaxFileBytes, " bytes"));
  }
  return text;
}

absl::StatusOr<std::string> ReadSpec(const std::string& source,
                                     std::istream& in) {
  if (source != "-") return ReadFileText(source, "spec file");
  std::string text((std::istreambuf_iterator<char>(in)),
                   std::istreambuf_iterator<char>());
  if (in.bad()) return absl::NotFoundError("cannot read the spec from stdin");
  return text;
}

// A --baseline FILE's values into options.file_values; false after
// printing why it cannot be read.
bool LoadBaselineFile(RegressOptions& options, std::ostream& err) {
  const std::string& path = options.baseline_file;
  absl::StatusOr<std::string> text = ReadFileText(path, "baseline file");
  if (!text.ok()) {
    err << "hpcai500: " << text.status().message() << "\n";
    return false;
  }
  auto values = ParseRegressBaselineFile(*text);
  if (!values.ok()) {
    err << "hpcai500: baseline file '" << path
        << "': " << values.status().message() << "\n";
    return false;
  }
  options.file_values = *std::move(values);
  return true;
}

// False after printing why, when --baseline RUN would judge a suite of
// several specs (`spec_yaml`, read from `source`): one run is one series'
// baseline, and every other spec would be judged against a different
// benchmark.
bool OneSeriesForOneRun(const RegressOptions& options,
                        const std::string& source, const std::string& spec_yaml,
                        std::ostream& err) {
  absl::StatusOr<Suite> suite = ParseSuite(spec_yaml);
  if (!suite.ok() || suite->specs.size() <= 1) return true;
  err << "hpcai500: --baseline " << options.baseline_run
      << " names one run, but '" << source << "' is a suite of "
      << suite->specs.size()
      << " specs; judge a suite against --baseline last-good, a FILE, "
         "or runs promoted per spec (hpcai500 baseline promote RUN)\n";
  return false;
}

}  // namespace

int RunCli(const std::vector<std::string>& args, const CliEnvironment& env) {
  std::ostream& out = *env.out;
  std::ostream& err = *env.err;
  auto parsed = ParseCliArgs(args, env.coordinator_env);
  if (!parsed.ok()) {
    err << "hpcai500: " << parsed.status().message() << "\n\n" << UsageText();
    return kExitUsage;
  }
  if (parsed->help) {
    out << (parsed->command.empty()
                ? UsageText()
                : CommandUsageText(*FindCliCommand(parsed->command)));
    return kExitOk;
  }
  const CliCommand& command = *FindCliCommand(parsed->command);

  CommandOptions options;
  options.coordinator = parsed->coordinator;
  options.time_zone = env.time_zone;
  options.retry = env.retry;
  absl::StatusOr<std::string> token =
      ResolveToken(parsed->token, env.token_env);
  if (!token.ok()) {
    err << "hpcai500: " << token.status().message() << "\n";
    return kExitNoInput;
  }
  options.token = *std::move(token);
  absl::StatusOr<TlsFiles> tls = LoadClientTlsFiles(parsed->tls);
  if (!tls.ok()) {
    err << "hpcai500: " << tls.status().message() << "\n";
    return kExitNoInput;
  }
  std::string spec_source;
  std::string spec_yaml;
  if (!command.args.empty() && command.args[0] == kSpecArg) {
    const std::string& source = parsed->positional[0];
    auto spec = ReadSpec(source, *env.in);
    if (!spec.ok()) {
      err << "hpcai500: " << spec.status().message() << "\n";
      return kExitNoInput;
    }
    spec_source = source == "-" ? "from stdin" : "'" + source + "'";
    spec_yaml = *std::move(spec);
  }
  // Only regress takes --baseline.
  RegressOptions& regress = parsed->regress;
  if (regress.baseline == RegressBaselineKind::kFile &&
      !LoadBaselineFile(regress, err)) {
    return kExitNoInput;
  }
  if (regress.baseline == RegressBaselineKind::kRun &&
      !OneSeriesForOneRun(regress, parsed->positional[0], spec_yaml, err)) {
    return kExitUsage;
  }

  const std::shared_ptr<grpc::ChannelCredentials> credentials =
      CoordinatorChannelCredentials(*tls);
  std::unique_ptr<v1::ClientService::StubInterface> stub =
      env.connect(parsed->coordinator, credentials);
  options.connect_again = [&env, &parsed, credentials] {
    return env.connect(parsed->coordinator, credentials);
  };
  const CoordinatorClient client(stub.get(), std::move(options), err);
  return command.run(
      CommandCall{*parsed, spec_source, spec_yaml, client, out, err});
}

}  // namespace hpcai500
