// RunCli: the command line parsed, the files a command needs read, the
// coordinator connected and the command run (cli/cli.h).
#include "cli/cli.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "cli/args/command_table.h"
#include "cli/args/parse_cli_args.h"
#include "cli/args/usage.h"
#include "cli/client/coordinator_client.h"
#include "cli/regress/regress_flags.h"
#include "common/status_macros.h"
#include "common/tls_files.h"
#include "common/token.h"
#include "methodology/suite.h"

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

// What a command reads before it connects.
struct CommandInputs {
  std::string token;        // empty: none
  TlsFiles tls;             // empty: plaintext
  std::string spec_source;  // "'FILE'" or "from stdin"; empty without SPEC
  std::string spec_yaml;
};

// The token, the TLS files and, for a command that takes a SPEC, the spec;
// NotFound or InvalidArgument naming what cannot be read.
absl::StatusOr<CommandInputs> ReadCommandInputs(const CliCommand& command,
                                                const CliArgs& args,
                                                const CliEnvironment& env) {
  CommandInputs inputs;
  ASSIGN_OR_RETURN(inputs.token, ResolveToken(args.token, env.token_env));
  ASSIGN_OR_RETURN(inputs.tls, LoadClientTlsFiles(args.tls));
  if (!command.args.empty() && command.args[0] == kSpecArg) {
    const std::string& source = args.positional[0];
    ASSIGN_OR_RETURN(inputs.spec_yaml, ReadSpec(source, *env.in));
    inputs.spec_source = source == "-" ? "from stdin" : "'" + source + "'";
  }
  return inputs;
}

// A --baseline FILE's values into options.file_values; the error names the
// file.
absl::Status LoadBaselineFile(RegressOptions& options) {
  const std::string& path = options.baseline_file;
  ASSIGN_OR_RETURN(const std::string text, ReadFileText(path, "baseline file"));
  auto values = ParseRegressBaselineFile(text);
  if (!values.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "baseline file '", path, "': ", values.status().message()));
  }
  options.file_values = *std::move(values);
  return absl::OkStatus();
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

// regress's --baseline before anything is submitted (only regress takes
// it): a FILE read (kExitNoInput when it cannot be), a RUN refused for a
// suite (kExitUsage). kExitOk to go on; otherwise it printed why.
int PrepareBaseline(CliArgs& args, const std::string& spec_yaml,
                    std::ostream& err) {
  RegressOptions& regress = args.regress;
  if (regress.baseline == RegressBaselineKind::kFile) {
    if (absl::Status loaded = LoadBaselineFile(regress); !loaded.ok()) {
      err << "hpcai500: " << loaded.message() << "\n";
      return kExitNoInput;
    }
  }
  if (regress.baseline == RegressBaselineKind::kRun &&
      !OneSeriesForOneRun(regress, args.positional[0], spec_yaml, err)) {
    return kExitUsage;
  }
  return kExitOk;
}

// Connects to args.coordinator and runs `command` with `inputs`.
int ConnectAndRun(const CliCommand& command, const CliArgs& args,
                  const CommandInputs& inputs, const CliEnvironment& env) {
  CommandOptions options;
  options.coordinator = args.coordinator;
  options.token = inputs.token;
  options.time_zone = env.time_zone;
  options.retry = env.retry;
  const std::shared_ptr<grpc::ChannelCredentials> credentials =
      CoordinatorChannelCredentials(inputs.tls);
  std::unique_ptr<v1::ClientService::StubInterface> stub =
      env.connect(args.coordinator, credentials);
  options.connect_again = [&env, &args, credentials] {
    return env.connect(args.coordinator, credentials);
  };
  const CoordinatorClient client(stub.get(), std::move(options), *env.err);
  return command.run(CommandCall{args,
                                 inputs.spec_source,
                                 inputs.spec_yaml,
                                 {client, *env.out, *env.err}});
}

}  // namespace

int RunCli(const std::vector<std::string>& args, const CliEnvironment& env) {
  std::ostream& out = *env.out;
  std::ostream& err = *env.err;
  absl::StatusOr<CliArgs> parsed = ParseCliArgs(args, env.coordinator_env);
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
  absl::StatusOr<CommandInputs> inputs =
      ReadCommandInputs(command, *parsed, env);
  if (!inputs.ok()) {
    err << "hpcai500: " << inputs.status().message() << "\n";
    return kExitNoInput;
  }
  if (const int code = PrepareBaseline(*parsed, inputs->spec_yaml, err);
      code != kExitOk) {
    return code;
  }
  return ConnectAndRun(command, *parsed, *inputs, env);
}

}  // namespace hpcai500
