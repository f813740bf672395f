// The house rules for command-line flags, over CLI11, shared by hpcai500d,
// hpcai500-agent and the hpcai500 CLI: `--flag value` and `--flag=value`
// both work; a flag given twice is refused unless it was added repeatable;
// an empty value is refused; a switch takes no value. CLI11's own --help is
// off: each binary adds a --help/-h switch and prints its own usage text.
//
// Thread-compatible: one thread builds and parses an App.
#ifndef HPCAI500_COMMON_FLAGS_H_
#define HPCAI500_COMMON_FLAGS_H_

#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "common/token.h"

namespace hpcai500 {

// An App for `name` with the rules above: no automatic help flag, and
// unknown arguments kept in remaining() when `allow_extras` (for callers
// that word those errors themselves) or refused by ParseFlags otherwise.
std::unique_ptr<CLI::App> NewFlagApp(const std::string& name,
                                     bool allow_extras = false);

// Adds `--name VALUE` into *value (borrowed for the life of `app`): at most
// once, not empty. `name` is the flag without dashes.
CLI::Option* AddValueFlag(CLI::App& app, const std::string& name,
                          std::string* value);

// Adds `--name VALUE`, repeatable: each value, non-empty, appended to
// *values (borrowed for the life of `app`).
CLI::Option* AddRepeatedFlag(CLI::App& app, const std::string& name,
                             std::vector<std::string>* values);

// Adds the switch `names` ("help,h" for --help and -h): at most once, no
// value; sets *on (borrowed for the life of `app`).
CLI::Option* AddSwitch(CLI::App& app, const std::string& names, bool* on);

// Adds --token and --token-file (one of them at most) into *flags, borrowed
// for the life of `app`.
void AddTokenFlags(CLI::App& app, TokenFlags* flags);

// Parses `args` (without the program name) with `app`. InvalidArgument
// naming the flag and the problem for anything CLI11 refuses; "flag
// '--NAME' given twice" for a repeated flag that is not repeatable.
absl::Status ParseFlags(CLI::App& app, const std::vector<std::string>& args);

}  // namespace hpcai500

#endif  // HPCAI500_COMMON_FLAGS_H_
