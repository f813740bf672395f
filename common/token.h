// Bearer tokens from the command line: one reader of token files and one
// rule for where a token comes from, shared by hpcai500d, hpcai500-agent and
// the hpcai500 CLI so they trim, refuse and word errors alike.
//
// Thread-safe: free functions.
#ifndef HPCAI500_COMMON_TOKEN_H_
#define HPCAI500_COMMON_TOKEN_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace hpcai500 {

// The environment variable the CLI and the agent take a token from when
// neither --token nor --token-file is given.
inline constexpr char kTokenEnvVar[] = "HPCAI500_TOKEN";

// A token file larger than this is a wrong file, not a token.
inline constexpr size_t kMaxTokenFileBytes = 64 * 1024;

// The token in the file at `path`, with surrounding whitespace trimmed.
// `flag` ("--token-file") names where the path came from in errors, which
// read "FLAG PATH: PROBLEM": NotFound when the file cannot be read,
// InvalidArgument when it is empty (or only whitespace) or larger than
// kMaxTokenFileBytes.
absl::StatusOr<std::string> ReadTokenFile(absl::string_view flag,
                                          const std::string& path);

// What a command line said about its token; both empty: none given.
struct TokenFlags {
  std::string token;       // --token
  std::string token_file;  // --token-file
};

// The token to send: --token if given, else the --token-file's (see
// ReadTokenFile), else `env` ($HPCAI500_TOKEN) trimmed if set and not
// blank, else "" for no token. Errors are ReadTokenFile's.
absl::StatusOr<std::string> ResolveToken(const TokenFlags& flags,
                                         const std::optional<std::string>& env);

}  // namespace hpcai500

#endif  // HPCAI500_COMMON_TOKEN_H_
