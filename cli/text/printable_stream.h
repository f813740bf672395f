// What the CLI prints passes through PrintableStreambuf: it writes no control
// character of its own, so each one in its output came from elsewhere (a
// node's address or labels, a worker's stderr tail, a server's message) and
// is escaped (common/printable.h), newlines and tabs kept. JSON output is
// unaffected: its writer escapes control characters already.
//
// Thread-compatible: one stream's buffer, used by one thread at a time.
#ifndef HPCAI500_CLI_TEXT_PRINTABLE_STREAM_H_
#define HPCAI500_CLI_TEXT_PRINTABLE_STREAM_H_

#include <streambuf>
#include <string>

namespace hpcai500 {

class PrintableStreambuf final : public std::streambuf {
 public:
  // Writes into `out` (borrowed; it must outlive this).
  explicit PrintableStreambuf(std::streambuf* out) : out_(out) {}
  ~PrintableStreambuf() override;

 protected:
  int_type overflow(int_type c) override;
  std::streamsize xsputn(const char* s, std::streamsize n) override;
  int sync() override;

 private:
  // Writes `text` (escaped) into out_; holds back a trailing UTF-8 lead
  // byte that may start a C1 control until the next byte comes.
  bool Put(std::string text);

  std::streambuf* const out_;
  std::string held_;  // at most one byte: 0xC2
};

}  // namespace hpcai500

#endif  // HPCAI500_CLI_TEXT_PRINTABLE_STREAM_H_
