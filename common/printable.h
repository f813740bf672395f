// Text from elsewhere made safe to print: what agents, workers and the
// network send reaches terminals (the CLI) and the operator log, where a
// control character could move the cursor, recolour or clear the screen, or
// forge a log line. Registration refuses control characters in an agent's
// names (server/coordinator/requests.h); what is printed anyway is escaped.
// Standard library only.
//
// Thread-safe: pure functions.
#ifndef HPCAI500_COMMON_PRINTABLE_H_
#define HPCAI500_COMMON_PRINTABLE_H_

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

}  // namespace hpcai500

#endif  // HPCAI500_COMMON_PRINTABLE_H_
