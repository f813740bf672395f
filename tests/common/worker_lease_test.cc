#include "common/worker_lease.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <string>

#include "tests/worker/test_util.h"

namespace hpcai500 {
namespace {

using std::chrono::milliseconds;
using testing::ScratchDir;
using testing::WaitFor;

void WriteLease(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

TEST(LeaseFile, FormatThenParseGivesBackTheDeadline) {
  EXPECT_EQ(FormatLease(1700000000123), "1700000000123\n");
  EXPECT_EQ(ParseLease(FormatLease(1700000000123)), 1700000000123);
  EXPECT_EQ(ParseLease("0"), 0);
}

TEST(LeaseFile, ParseRefusesAnythingButPlainDigits) {
  for (const char* bad : {"", "\n", "-5\n", "+5", " 5", "5 \n", "5\n\n", "5x",
                          "1234567890123456789"}) {
    EXPECT_EQ(ParseLease(bad), std::nullopt) << "'" << bad << "'";
  }
}

TEST(LeaseFile, ReadLeaseFileIsNulloptWithoutAFileOrALease) {
  ScratchDir dir("lease_read");
  EXPECT_EQ(ReadLeaseFile(""), std::nullopt);
  EXPECT_EQ(ReadLeaseFile(dir.path() + "/missing"), std::nullopt);
  WriteLease(dir.path() + "/lease", "not a lease");
  EXPECT_EQ(ReadLeaseFile(dir.path() + "/lease"), std::nullopt);
  WriteLease(dir.path() + "/lease", FormatLease(42));
  EXPECT_EQ(ReadLeaseFile(dir.path() + "/lease"), 42);
}

TEST(Lease, NotEnforcedWithoutADeadlineAtStart) {
  Lease none("", std::nullopt);
  EXPECT_FALSE(none.enforced());
  Lease unseen("/w/runs/1/attempt-1/lease", std::nullopt);
  EXPECT_FALSE(unseen.enforced());
  EXPECT_NE(unseen.Describe().find("running without a lease"),
            std::string::npos);
  // A file that appears later does not start enforcing it.
  EXPECT_EQ(unseen.Expired(/*read=*/100, /*now_ms=*/1000000), "");
}

TEST(Lease, ExpiresAtTheNewestDeadlineRead) {
  Lease lease("/w/lease", 1000);
  ASSERT_TRUE(lease.enforced());
  EXPECT_EQ(lease.Expired(std::nullopt, 999), "");
  EXPECT_EQ(lease.Expired(/*read=*/5000, 1500), "");  // renewed
  EXPECT_EQ(lease.Expired(std::nullopt, 4999), "");   // unread: 5000 holds
  const std::string reason = lease.Expired(std::nullopt, 5250);
  EXPECT_NE(reason.find("lease /w/lease ran out 250 ms ago"), std::string::npos)
      << reason;
  // The agent may also shorten it (a maintenance window ended early).
  Lease shortened("/w/lease", 9000);
  EXPECT_NE(shortened.Expired(/*read=*/2000, 3000), "");
}

// A clock the test sets, read by the watchdog's thread.
struct TestClock {
  std::atomic<int64_t> now_ms{0};
  LeaseWatchdog::NowMs Function() {
    return [this] { return now_ms.load(); };
  }
};

// A period no test waits for: only Check() looks.
constexpr milliseconds kNever(3600 * 1000);

TEST(LeaseWatchdog, CheckFollowsRenewalsAndFiresOnce) {
  ScratchDir dir("lease_check");
  const std::string path = dir.path() + "/lease";
  WriteLease(path, FormatLease(10000));
  TestClock clock;
  clock.now_ms = 1000;
  int calls = 0;
  std::string reason;
  LeaseWatchdog watchdog(Lease(path, ReadLeaseFile(path)), kNever,
                         clock.Function(), [&](const std::string& why) {
                           reason = why;
                           ++calls;
                         });
  EXPECT_FALSE(watchdog.Check());
  WriteLease(path, FormatLease(20000));  // renewed
  clock.now_ms = 15000;
  EXPECT_FALSE(watchdog.Check());
  clock.now_ms = 20001;  // not renewed any more
  EXPECT_TRUE(watchdog.Check());
  EXPECT_TRUE(watchdog.Check());  // and a checkpoint after it is not written
  EXPECT_EQ(calls, 1);
  EXPECT_NE(reason.find("ran out 1 ms ago"), std::string::npos) << reason;
}

TEST(LeaseWatchdog, ALeaseThatRanOutCountsOnlyOnceItsHolderIsGone) {
  ScratchDir dir("lease_holder");
  const std::string path = dir.path() + "/lease";
  WriteLease(path, FormatLease(10000));
  TestClock clock;
  clock.now_ms = 20000;  // ran out: the agent renewed it late
  bool holder_alive = true;
  int calls = 0;
  LeaseWatchdog watchdog(
      Lease(path, ReadLeaseFile(path)), kNever, clock.Function(),
      [&](const std::string&) { ++calls; }, [&] { return holder_alive; });
  EXPECT_FALSE(watchdog.Check());  // the agent lives: it fences us itself
  holder_alive = false;            // gone: the lease decides
  EXPECT_TRUE(watchdog.Check());
  EXPECT_EQ(calls, 1);
}

TEST(LeaseWatchdog, ItsThreadNoticesARunOutLeaseOnItsOwn) {
  ScratchDir dir("lease_thread");
  const std::string path = dir.path() + "/lease";
  WriteLease(path, FormatLease(10000));
  TestClock clock;
  clock.now_ms = 10000;
  std::atomic<int> calls{0};
  LeaseWatchdog watchdog(Lease(path, ReadLeaseFile(path)), milliseconds(5),
                         clock.Function(),
                         [&](const std::string&) { ++calls; });
  ASSERT_TRUE(WaitFor([&] { return calls.load() > 0; }, milliseconds(10000)));
  EXPECT_TRUE(watchdog.Check());
  EXPECT_EQ(calls.load(), 1);
}

TEST(LeaseWatchdog, ALeaseFileThatDisappearsRunsOut) {
  ScratchDir dir("lease_gone");
  const std::string path = dir.path() + "/lease";
  WriteLease(path, FormatLease(5000));
  TestClock clock;
  std::atomic<int> calls{0};
  LeaseWatchdog watchdog(Lease(path, ReadLeaseFile(path)), kNever,
                         clock.Function(),
                         [&](const std::string&) { ++calls; });
  std::filesystem::remove(path);
  EXPECT_FALSE(watchdog.Check());
  clock.now_ms = 5000;
  EXPECT_TRUE(watchdog.Check());
  EXPECT_EQ(calls.load(), 1);
}

TEST(LeaseWatchdog, WithoutALeaseNeverFires) {
  TestClock clock;
  clock.now_ms = INT64_MAX;
  int calls = 0;
  LeaseWatchdog watchdog(Lease("", std::nullopt), milliseconds(1),
                         clock.Function(),
                         [&](const std::string&) { ++calls; });
  EXPECT_FALSE(watchdog.Check());
  EXPECT_EQ(calls, 0);
}

}  // namespace
}  // namespace hpcai500
