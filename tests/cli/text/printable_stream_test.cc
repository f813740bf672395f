#include "cli/text/printable_stream.h"

#include <ostream>
#include <sstream>

#include "gtest/gtest.h"

namespace hpcai500 {
namespace {

TEST(PrintableStreambuf, EscapesControlCharactersKeepsLinesAndUtf8) {
  std::ostringstream sink;
  {
    PrintableStreambuf buffer(sink.rdbuf());
    std::ostream out(&buffer);
    out << "name  address\n"
        << "a     10.0.0.1\x1b[31m\tred\n";
    // A C1 control split across two writes is still found.
    out << "csi \xc2";
    out.put('\x9b');
    out << "2J caf\xc3\xa9" << std::flush;
    EXPECT_EQ(sink.str(),
              "name  address\na     10.0.0.1\\x1b[31m\tred\ncsi \\u009b2J "
              "caf\xc3\xa9");
    out << "last \xc2";
  }
  // A lead byte held back at the end is written when the stream goes.
  EXPECT_EQ(sink.str().substr(sink.str().size() - 6), "last \xc2");
}

}  // namespace
}  // namespace hpcai500
