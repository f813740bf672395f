#include "common/lease_holder.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <functional>
#include <string>

namespace hpcai500 {
namespace {

TEST(ParentIsHolder, HoldsWhileTheNamedPidIsThisProcesssParent) {
  const std::function<bool()> parent =
      ParentIsHolder(std::to_string(::getppid()).c_str());
  ASSERT_TRUE(parent);
  EXPECT_TRUE(parent());
  // A process that is not our parent (we are not our own child).
  const std::function<bool()> other =
      ParentIsHolder(std::to_string(::getpid()).c_str());
  ASSERT_TRUE(other);
  EXPECT_FALSE(other());
}

TEST(ParentIsHolder, NoneWithoutAPidAboveInit) {
  // Init adopts the orphans of a killed agent: never a holder.
  for (const char* text : {"1", "0", "", "-5", " 42", "42x", "99999999999"}) {
    EXPECT_FALSE(ParentIsHolder(text)) << "'" << text << "'";
  }
  EXPECT_FALSE(ParentIsHolder(nullptr));
}

}  // namespace
}  // namespace hpcai500
