#include "common/flags.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace hpcai500 {
namespace {

const CLI::Validator& NonEmpty() {
  static const auto* const kNonEmpty = new CLI::Validator(
      [](std::string& value) {
        return value.empty() ? std::string("empty value") : std::string();
      },
      /*validator_desc=*/"", /*validator_name=*/"non-empty");
  return *kNonEmpty;
}

// The first flag of `app` or its parsed subcommands given more often than
// it may be; nullptr if none.
const CLI::Option* RepeatedFlag(const CLI::App& app) {
  for (const CLI::Option* option : app.get_options()) {
    if (option->get_multi_option_policy() == CLI::MultiOptionPolicy::Throw &&
        option->count() > 1) {
      return option;
    }
  }
  for (const CLI::App* sub : app.get_subcommands()) {
    if (const CLI::Option* option = RepeatedFlag(*sub)) return option;
  }
  return nullptr;
}

}  // namespace

std::unique_ptr<CLI::App> NewFlagApp(const std::string& name,
                                     bool allow_extras) {
  auto app = std::make_unique<CLI::App>("", name);
  app->set_help_flag();
  app->allow_extras(allow_extras);
  return app;
}

CLI::Option* AddValueFlag(CLI::App& app, const std::string& name,
                          std::string* value) {
  return app.add_option("--" + name, *value)
      ->multi_option_policy(CLI::MultiOptionPolicy::Throw)
      ->check(NonEmpty());
}

CLI::Option* AddRepeatedFlag(CLI::App& app, const std::string& name,
                             std::vector<std::string>* values) {
  return app.add_option("--" + name, *values)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->allow_extra_args(false)  // one value per --name, not all that follow
      ->check(NonEmpty());
}

CLI::Option* AddSwitch(CLI::App& app, const std::string& names, bool* on) {
  std::string spelled;
  for (const std::string& name : CLI::detail::split(names, ',')) {
    if (!spelled.empty()) spelled += ',';
    spelled += (name.size() == 1 ? "-" : "--") + name;
  }
  return app.add_flag(spelled, *on)
      ->multi_option_policy(CLI::MultiOptionPolicy::Throw)
      ->disable_flag_override();
}

void AddTokenFlags(CLI::App& app, TokenFlags* flags) {
  CLI::Option* token = AddValueFlag(app, "token", &flags->token);
  CLI::Option* token_file = AddValueFlag(app, "token-file", &flags->token_file);
  token->excludes(token_file);
}

absl::Status ParseFlags(CLI::App& app, const std::vector<std::string>& args) {
  // CLI11 takes the arguments last first.
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(std::move(reversed));
  } catch (const CLI::ExtrasError& error) {
    std::vector<std::string> extras = app.remaining();
    if (extras.empty()) return absl::InvalidArgumentError(error.what());
    return absl::InvalidArgumentError(
        absl::StrCat("unknown argument '", extras.front(), "'"));
  } catch (const CLI::ParseError& error) {
    if (const CLI::Option* repeated = RepeatedFlag(app)) {
      return absl::InvalidArgumentError(
          absl::StrCat("flag '", repeated->get_name(), "' given twice"));
    }
    return absl::InvalidArgumentError(error.what());
  }
  return absl::OkStatus();
}

}  // namespace hpcai500
