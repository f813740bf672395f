// Text from elsewhere made safe to print: what agents, workers, users and
// the network send reaches terminals (the CLI) and the operator log, where a
// control character could move the cursor, recolour or clear the screen, or
// forge a line. The one rule: names are refused at the door when they hold
// one (IsNodeName for nodes: registration, an agent's --name, `hpcai500d
// token create --node`; HasControlCharacter for the rest, such as a token's
// user), and a stored free text (a drain, invalidation or maintenance
// reason, an audit detail) is escaped wherever it is printed on a line of
// its own or in a table cell (EscapeLine). JSON output stays valid: its
// writer escapes control characters itself. Standard library only.
//
// Thread-safe: pure functions.
#ifndef HPCAI500_COMMON_PRINTABLE_H_
#define HPCAI500_COMMON_PRINTABLE_H_

#include <cstddef>
#include <string>
#include <string_view>

namespace hpcai500 {

// C0 controls (below 0x20) and DEL; tab and newline count.
inline bool IsControlCharacter(char c) {
  return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
}

// Whether `text` holds a control character, or a C1 control (U+0080 to
// U+009F, which some terminals obey like ESC sequences) in UTF-8.
bool HasControlCharacter(std::string_view text);

// `text` with each control character written as an escape: "\n", "\t",
// "\r", else "\xNN" (C1 controls as "\u00NN"). With `keep_line_breaks`,
// newlines and tabs stay as they are (multi-line text such as a stderr
// tail, for a terminal). Everything else, UTF-8 included, is kept.
std::string EscapeControlCharacters(std::string_view text,
                                    bool keep_line_breaks);

// `text` for one line or one table cell: every control character escaped,
// newlines and tabs too, so that it cannot start a line of its own.
inline std::string EscapeLine(std::string_view text) {
  return EscapeControlCharacters(text, /*keep_line_breaks=*/false);
}

// The longest node name (a host name's limit, HOST_NAME_MAX).
inline constexpr size_t kMaxNodeNameBytes = 64;
// What IsNodeName accepts, for messages.
inline constexpr char kNodeNameRule[] =
    "1 to 64 letters, digits, '.', '-' or '_', not '.' or '..'";

// Whether `name` may name a node: kNodeNameRule. It names the node's
// folders too, hence no '/' and neither '.' nor '..'.
bool IsNodeName(std::string_view name);

}  // namespace hpcai500

#endif  // HPCAI500_COMMON_PRINTABLE_H_
