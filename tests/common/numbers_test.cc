#include "common/numbers.h"

#include <gtest/gtest.h>

namespace hpcai500 {
namespace {

TEST(Numbers, ParseIntTakesTheWholeTextWithinTheRange) {
  EXPECT_EQ(ParseInt("42", 0, 100), 42);
  EXPECT_EQ(ParseInt("-3", -5, 5), -3);
  EXPECT_FALSE(ParseInt("", 0, 100));
  EXPECT_FALSE(ParseInt("4x", 0, 100));
  EXPECT_FALSE(ParseInt("101", 0, 100));
  EXPECT_FALSE(ParseInt("99999999999999999999", 0, INT64_MAX));
}

TEST(Numbers, ReadIntNamesWhatItRead) {
  int64_t v = 0;
  std::string error;
  EXPECT_TRUE(ReadInt("--epochs", "7", 1, 9, &v, &error));
  EXPECT_EQ(v, 7);
  EXPECT_FALSE(ReadInt("RANK", "12", 0, 3, &v, &error));
  EXPECT_EQ(error, "RANK: '12' is not an integer in [0, 3]");
}

TEST(Numbers, ParseNumberAboveExcludesTheLowEnd) {
  EXPECT_EQ(ParseNumberAbove("0.5", 0, 10), 0.5);
  EXPECT_EQ(ParseNumberAbove("10", 0, 10), 10.0);
  EXPECT_FALSE(ParseNumberAbove("0", 0, 10));
  EXPECT_FALSE(ParseNumberAbove("nan", 0, 10));
  EXPECT_FALSE(ParseNumberAbove("1x", 0, 10));
}

}  // namespace
}  // namespace hpcai500
