// The command flags of `hpcai500`, one row each, and their binding onto
// CLI11 (cli/args/command_flags.h).
#include "cli/args/command_flags.h"

#include "absl/strings/str_cat.h"
#include "common/flags.h"

namespace hpcai500 {
namespace {

// Every command flag; the command table says which commands take which.
const CommandFlag kCommandFlags[] = {
    {"wait", &RawCliArgs::wait},
    {"json", &RawCliArgs::json},
    {"workload", &RawCliArgs::workload},
    {"config", &RawCliArgs::config},
    {"name", &RawCliArgs::name},
    {"state", &RawCliArgs::state},
    {"limit", &RawCliArgs::limit},
    {"offset", &RawCliArgs::offset},
    {"user", &RawCliArgs::user},
    {"queue", &RawCliArgs::queue},
    {"since", &RawCliArgs::since},
    {"until", &RawCliArgs::until},
    {"reason", &RawCliArgs::reason, /*required=*/true},
    {"timeout", &RawCliArgs::timeout},
    {"window", &RawCliArgs::window},
    {"baseline", &RawCliArgs::baseline},
    {"reference", &RawCliArgs::references},
    {"tolerance", &RawCliArgs::tolerance},
    {"max-cv", &RawCliArgs::max_cv},
    {"metric", &RawCliArgs::metrics},
    {"junit", &RawCliArgs::junit},
    {"markdown", &RawCliArgs::markdown},
    {"json-file", &RawCliArgs::json_file},
    {"min-history", &RawCliArgs::min_history},
    {"request-id", &RawCliArgs::request_id},
    {"for", &RawCliArgs::for_duration},
    {"nodes", &RawCliArgs::nodes},
    {"ranks-per-node", &RawCliArgs::ranks_per_node},
    {"precision", &RawCliArgs::precision},
    {"compression", &RawCliArgs::compression},
    {"scaling", &RawCliArgs::scaling},
    {"dry-run", &RawCliArgs::dry_run},
    {"out", &RawCliArgs::out, /*required=*/true},
    {"submission", &RawCliArgs::submission},
    {"series", &RawCliArgs::series},
    {"regressions-only", &RawCliArgs::regressions_only},
};

// Adds `flag` to `sub`, bound to its field of `raw`.
void AddCommandFlag(CLI::App& sub, const CommandFlag& flag, RawCliArgs& raw) {
  if (auto* on = std::get_if<bool RawCliArgs::*>(&flag.field)) {
    AddSwitch(sub, flag.name, &(raw.**on));
  } else if (auto* value =
                 std::get_if<std::string RawCliArgs::*>(&flag.field)) {
    AddValueFlag(sub, flag.name, &(raw.**value));
  } else {
    AddRepeatedFlag(
        sub, flag.name,
        &(raw.*std::get<std::vector<std::string> RawCliArgs::*>(flag.field)));
  }
}

// Adds `command` with its flags to `app`; its positional arguments go to
// raw.args.positional, and flags it does not know fall through to `app`.
void AddCommand(CLI::App& app, const CliCommand& command, RawCliArgs& raw) {
  CLI::App* sub = app.add_subcommand(command.name);
  sub->set_help_flag();
  sub->allow_extras();
  sub->fallthrough();
  sub->add_option("args", raw.args.positional);
  for (const std::string& listed : command.flags) {
    if (const CommandFlag* flag = FindCommandFlag(listed)) {
      AddCommandFlag(*sub, *flag, raw);
    }
  }
}

}  // namespace

const CommandFlag* FindCommandFlag(absl::string_view listed) {
  const absl::string_view name = CommandFlagName(listed);
  for (const CommandFlag& flag : kCommandFlags) {
    if (flag.name == name) return &flag;
  }
  return nullptr;
}

std::unique_ptr<CLI::App> NewCliFlagApp(RawCliArgs& raw) {
  std::unique_ptr<CLI::App> app = NewFlagApp("hpcai500", /*allow_extras=*/true);
  app->require_subcommand(0, 1);
  AddValueFlag(*app, "coordinator", &raw.coordinator);
  AddTokenFlags(*app, &raw.args.token);
  AddClientTlsFlags(*app, &raw.args.tls, /*with_client_certificate=*/false);
  AddSwitch(*app, "help,h", &raw.args.help);
  for (const CliCommand& command : CliCommands()) {
    AddCommand(*app, command, raw);
  }
  return app;
}

absl::Status MissingRequiredFlag(const CliCommand& command,
                                 const RawCliArgs& raw) {
  for (const std::string& listed : command.flags) {
    const CommandFlag* flag = FindCommandFlag(listed);
    if (flag == nullptr || !flag->required || IsOptionalFlag(listed)) continue;
    auto* value = std::get_if<std::string RawCliArgs::*>(&flag->field);
    if (value != nullptr && (raw.**value).empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", command.name, "' needs --", flag->name));
    }
  }
  return absl::OkStatus();
}

}  // namespace hpcai500
