#include "common/host_port.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hpcai500 {
namespace {

using ::testing::HasSubstr;

TEST(HostPort, SplitsHostAndPortAndChecksTheRange) {
  absl::StatusOr<HostPort> v4 = ParseHostPort("127.0.0.1:7500");
  ASSERT_TRUE(v4.ok()) << v4.status();
  EXPECT_EQ(v4->host, "127.0.0.1");
  EXPECT_EQ(v4->port, 7500);
  absl::StatusOr<HostPort> v6 = ParseHostPort("[::1]:0");
  ASSERT_TRUE(v6.ok()) << v6.status();
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->port, 0);
  for (const char* bad : {"127.0.0.1:99999", "127.0.0.1:65536", "h:-1", "h:+80",
                          "h: 80", "h:", ":80", "h", "[::1", "[::1]80"}) {
    EXPECT_TRUE(absl::IsInvalidArgument(ParseHostPort(bad).status())) << bad;
  }
  EXPECT_THAT(ParseHostPort("h:99999").status().message(),
              HasSubstr("port must be a number from 0 to 65535"));
  EXPECT_THAT(ParseHostPort("h\x1b[2J").status().message(),
              HasSubstr("h\\x1b[2J"));
}

TEST(HostPort, CheckCanListenRefusesAPortInUse) {
  const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in address = {};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(
      ::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof(address)),
      0);
  ASSERT_EQ(::listen(listener, 1), 0);
  socklen_t length = sizeof(address);
  ASSERT_EQ(
      ::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length),
      0);
  const HostPort taken{"127.0.0.1", ntohs(address.sin_port)};
  const absl::Status refused = CheckCanListen(taken);
  EXPECT_TRUE(absl::IsUnavailable(refused)) << refused;
  EXPECT_THAT(refused.message(), HasSubstr("cannot listen there"));
  ::close(listener);
  EXPECT_TRUE(CheckCanListen(taken).ok());
  EXPECT_TRUE(CheckCanListen(HostPort{"127.0.0.1", 0}).ok());
}

}  // namespace
}  // namespace hpcai500
