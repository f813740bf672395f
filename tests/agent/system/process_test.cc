// ParseProcStatStartTime: how a process is told apart from one that reused
// its pid.
#include "agent/system/process.h"

#include <cstdint>
#include <string>

#include "gtest/gtest.h"

namespace hpcai500::agent {
namespace {

TEST(ProcStat, StartTimeIsField22EvenWithSpacesInTheName) {
  std::string stat = "4242 (my (odd) name) S 1 4242 4242 0 -1 4194560 ";
  // Fields 10..21, then 22 = 777.
  for (int field = 10; field <= 21; ++field) stat += "0 ";
  stat += "777 0 0\n";
  absl::StatusOr<uint64_t> start = ParseProcStatStartTime(stat);
  ASSERT_TRUE(start.ok()) << start.status();
  EXPECT_EQ(*start, 777u);
  std::string zombie = stat;
  zombie.replace(zombie.find(") S") + 2, 1, "Z");
  EXPECT_TRUE(absl::IsNotFound(ParseProcStatStartTime(zombie).status()));
  EXPECT_FALSE(ParseProcStatStartTime("4242 (x) S 1 2").ok());
}

}  // namespace
}  // namespace hpcai500::agent
