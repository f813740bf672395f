#include "common/printable.h"

#include <cstdio>

namespace hpcai500 {
namespace {

// UTF-8's lead byte of U+0080 to U+00BF; a C1 control when the next byte is
// 0x80 to 0x9F.
constexpr unsigned char kC1Lead = 0xC2;

bool IsC1At(std::string_view text, size_t i) {
  return static_cast<unsigned char>(text[i]) == kC1Lead &&
         i + 1 < text.size() &&
         static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
         static_cast<unsigned char>(text[i + 1]) <= 0x9F;
}

}  // namespace

bool HasControlCharacter(std::string_view text) {
  for (size_t i = 0; i < text.size(); ++i) {
    if (IsControlCharacter(text[i]) || IsC1At(text, i)) return true;
  }
  return false;
}

bool IsNodeName(std::string_view name) {
  if (name.empty() || name.size() > kMaxNodeNameBytes || name == "." ||
      name == "..") {
    return false;
  }
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_';
    if (!ok) return false;
  }
  return true;
}

std::string EscapeControlCharacters(std::string_view text,
                                    bool keep_line_breaks) {
  std::string out;
  out.reserve(text.size());
  char escape[8];
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (IsC1At(text, i)) {
      std::snprintf(escape, sizeof(escape), "\\u%04x",
                    static_cast<unsigned char>(text[i + 1]));
      out += escape;
      ++i;
      continue;
    }
    if (!IsControlCharacter(c) ||
        (keep_line_breaks && (c == '\n' || c == '\t'))) {
      out += c;
      continue;
    }
    switch (c) {
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        std::snprintf(escape, sizeof(escape), "\\x%02x",
                      static_cast<unsigned char>(c));
        out += escape;
    }
  }
  return out;
}

}  // namespace hpcai500
