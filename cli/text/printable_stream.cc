// PrintableStreambuf: control characters escaped on the way out
// (cli/text/printable_stream.h).
#include "cli/text/printable_stream.h"

#include "common/printable.h"

namespace hpcai500 {

PrintableStreambuf::~PrintableStreambuf() { sync(); }

bool PrintableStreambuf::Put(std::string text) {
  text.insert(0, held_);
  held_.clear();
  if (!text.empty() && static_cast<unsigned char>(text.back()) == 0xC2) {
    held_ = text.back();
    text.pop_back();
  }
  const std::string escaped =
      EscapeControlCharacters(text, /*keep_line_breaks=*/true);
  return out_->sputn(escaped.data(),
                     static_cast<std::streamsize>(escaped.size())) ==
         static_cast<std::streamsize>(escaped.size());
}

PrintableStreambuf::int_type PrintableStreambuf::overflow(int_type c) {
  if (traits_type::eq_int_type(c, traits_type::eof())) return 0;
  return Put(std::string(1, traits_type::to_char_type(c))) ? c
                                                           : traits_type::eof();
}

std::streamsize PrintableStreambuf::xsputn(const char* s, std::streamsize n) {
  return Put(std::string(s, static_cast<size_t>(n))) ? n : 0;
}

int PrintableStreambuf::sync() {
  if (!held_.empty()) {
    out_->sputn(held_.data(), static_cast<std::streamsize>(held_.size()));
    held_.clear();
  }
  return out_->pubsync();
}

}  // namespace hpcai500
