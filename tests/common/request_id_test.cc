#include "common/request_id.h"

#include <set>
#include <string>

#include "absl/strings/ascii.h"
#include "gtest/gtest.h"

namespace hpcai500 {
namespace {

TEST(RequestId, NewIdsAre128BitsInHexAndDiffer) {
  std::set<std::string> ids;
  for (int i = 0; i < 100; ++i) {
    const std::string id = NewRequestId();
    ASSERT_EQ(id.size(), 32u) << id;
    for (char c : id) EXPECT_TRUE(absl::ascii_isxdigit(c)) << id;
    EXPECT_TRUE(CheckRequestId(id).ok()) << id;
    ids.insert(id);
  }
  EXPECT_EQ(ids.size(), 100u);
}

TEST(RequestId, IsOneToTheMostOfAPlainAlphabet) {
  EXPECT_TRUE(CheckRequestId("ci:pipeline-812.job_3").ok());
  EXPECT_TRUE(CheckRequestId(std::string(kMaxRequestIdBytes, 'a')).ok());
  EXPECT_TRUE(absl::IsInvalidArgument(CheckRequestId("")));
  EXPECT_TRUE(absl::IsInvalidArgument(
      CheckRequestId(std::string(kMaxRequestIdBytes + 1, 'a'))));
  EXPECT_TRUE(absl::IsInvalidArgument(CheckRequestId("two words")));
  const absl::Status escape = CheckRequestId("a\x1b[2Jb");
  EXPECT_TRUE(absl::IsInvalidArgument(escape));
  EXPECT_EQ(escape.message().find('\x1b'), std::string::npos)
      << "printed escaped";
}

}  // namespace
}  // namespace hpcai500
