#include "common/printable.h"

#include "gtest/gtest.h"

namespace hpcai500 {
namespace {

TEST(Printable, FindsC0C1AndDelButNotUtf8Text) {
  EXPECT_FALSE(HasControlCharacter("plain text, caf\xc3\xa9 \xe2\x82\xac"));
  EXPECT_TRUE(HasControlCharacter("a\nb"));
  EXPECT_TRUE(HasControlCharacter("\x1b[31mred"));
  EXPECT_TRUE(HasControlCharacter("del\x7f"));
  EXPECT_TRUE(
      HasControlCharacter("csi\xc2\x9b"
                          "31m"));
  EXPECT_FALSE(HasControlCharacter("nbsp\xc2\xa0"));
  EXPECT_FALSE(HasControlCharacter("lead at the end \xc2"));
}

TEST(Printable, EscapesWhatCouldMoveTheCursorOrForgeALine) {
  EXPECT_EQ(EscapeControlCharacters("a\nb\tc\rd\x1b[2J\x7f", false),
            "a\\nb\\tc\\rd\\x1b[2J\\x7f");
  EXPECT_EQ(EscapeControlCharacters("tail\n\tline\x1b", true),
            "tail\n\tline\\x1b");
  EXPECT_EQ(EscapeControlCharacters("csi\xc2\x9b"
                                    "31m caf\xc3\xa9",
                                    true),
            "csi\\u009b31m caf\xc3\xa9");
}

TEST(Printable, EscapeLineKeepsAReasonOnOneLine) {
  EXPECT_EQ(EscapeLine("disk\nI 2026-12-04 forged\tline"),
            "disk\\nI 2026-12-04 forged\\tline");
  EXPECT_EQ(EscapeLine("plain, caf\xc3\xa9"), "plain, caf\xc3\xa9");
}

TEST(Printable, NodeNamesArePlainAndNoPathStep) {
  for (const char* good : {"node-1", "gpu01.rack_2", "a", "N.1-x_y"}) {
    EXPECT_TRUE(IsNodeName(good)) << good;
  }
  EXPECT_TRUE(IsNodeName(std::string(kMaxNodeNameBytes, 'n')));
  for (const char* bad :
       {"", ".", "..", "a b", "a/b", "node\x1b[2J", "node\n", "caf\xc3\xa9"}) {
    EXPECT_FALSE(IsNodeName(bad)) << EscapeLine(bad);
  }
  EXPECT_FALSE(IsNodeName(std::string(kMaxNodeNameBytes + 1, 'n')));
}

}  // namespace
}  // namespace hpcai500
