#include "cli/format.h"

#include "gtest/gtest.h"

namespace hpcai500 {
namespace {

TEST(FormatFlops, PicksTheDecimalUnitWithTwoDecimals) {
  EXPECT_EQ(FormatFlops(0), "0.00 FLOPS");
  EXPECT_EQ(FormatFlops(950), "950.00 FLOPS");
  EXPECT_EQ(FormatFlops(1.234e12), "1.23 TFLOPS");
  EXPECT_EQ(FormatFlops(45.6e9), "45.60 GFLOPS");
  EXPECT_EQ(FormatFlops(2.5e15), "2.50 PFLOPS");
  EXPECT_EQ(FormatFlops(3e21), "3000.00 EFLOPS");
}

TEST(FormatFlops, RoundsUpIntoTheNextUnitRatherThanPrinting1000) {
  EXPECT_EQ(FormatFlops(999.999e6), "1.00 GFLOPS");
}

TEST(FormatTimeMs, FormatsInTheZoneAndDashesZero) {
  EXPECT_EQ(FormatTimeMs(0, absl::UTCTimeZone()), "-");
  EXPECT_EQ(FormatTimeMs(1700000000123, absl::UTCTimeZone()),
            "2023-11-14 22:13:20");
}

TEST(FormatTable, PadsColumnsAndAlignsRightOnRequest) {
  std::string table =
      FormatTable({"id", "name"}, {{"7", "a"}, {"12", "longer"}},
                  /*right_aligned=*/{0});
  EXPECT_EQ(table,
            "id  name\n"
            " 7  a\n"
            "12  longer\n");
}

}  // namespace
}  // namespace hpcai500
