// Strict decimal numbers in command lines and environment variables: the
// whole text must be the number, within a range. Shared by WorkerArgs and the
// worker's rank environment so every refusal reads the same. Standard
// library only.
//
// Thread-safe: pure functions (errno is thread-local).
#ifndef HPCAI500_COMMON_NUMBERS_H_
#define HPCAI500_COMMON_NUMBERS_H_

#include <cstdint>
#include <optional>
#include <string>

namespace hpcai500 {

// `text` as a base-10 integer in [low, high] (strtoll's syntax: leading
// blanks and a sign allowed, nothing after the digits); nullopt otherwise.
std::optional<int64_t> ParseInt(const std::string& text, int64_t low,
                                int64_t high);

// ParseInt into *out; false with *error = "<name>: '<text>' is not an
// integer in [<low>, <high>]" when it fails.
bool ReadInt(const std::string& name, const std::string& text, int64_t low,
             int64_t high, int64_t* out, std::string* error);

// `text` as a decimal number (strtod's syntax, the whole text) in
// (low, high]; nullopt otherwise, NaN included.
std::optional<double> ParseNumberAbove(const std::string& text, double low,
                                       double high);

}  // namespace hpcai500

#endif  // HPCAI500_COMMON_NUMBERS_H_
