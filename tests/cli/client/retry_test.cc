#include "cli/client/retry.h"

#include <vector>

#include "common/error_cause.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hpcai500 {
namespace {

// A policy whose waits are recorded, not slept.
RetryPolicy RecordingPolicy(std::vector<absl::Duration>* waits) {
  RetryPolicy policy;
  policy.sleep = [waits](absl::Duration wait) { waits->push_back(wait); };
  return policy;
}

TEST(Retry, OnlyAnErrorThatMayHaveLostTheAnswerIsRetried) {
  EXPECT_TRUE(IsRetryable(grpc::Status(grpc::StatusCode::UNAVAILABLE, "")));
  EXPECT_TRUE(
      IsRetryable(grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "")));
  for (grpc::StatusCode answered :
       {grpc::StatusCode::OK, grpc::StatusCode::INVALID_ARGUMENT,
        grpc::StatusCode::ALREADY_EXISTS, grpc::StatusCode::PERMISSION_DENIED,
        grpc::StatusCode::RESOURCE_EXHAUSTED, grpc::StatusCode::INTERNAL}) {
    EXPECT_FALSE(IsRetryable(grpc::Status(answered, ""))) << answered;
  }
}

TEST(Retry, AnAnswerTheStoreCouldNotMakeIsNotRetried) {
  EXPECT_FALSE(IsRetryable(ToGrpcStatus(WithCause(
      absl::UnavailableError("database full"), v1::ErrorCause::CAUSE_STORE))));
  // The same code without the mark: the connection's, retried.
  EXPECT_TRUE(
      IsRetryable(ToGrpcStatus(absl::UnavailableError("database full"))));
}

TEST(ErrorCause, SurvivesTheMappingToGrpcAsAGoogleRpcStatus) {
  const absl::Status marked =
      WithCause(absl::UnavailableError("full"), v1::ErrorCause::CAUSE_STORE);
  EXPECT_EQ(CauseOf(marked), v1::ErrorCause::CAUSE_STORE);
  const grpc::Status status = ToGrpcStatus(marked);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(status.error_message(), "full");
  EXPECT_EQ(CauseOf(status), v1::ErrorCause::CAUSE_STORE);
  v1::RpcStatus details;  // google.rpc.Status's layout
  ASSERT_TRUE(details.ParseFromString(status.error_details()));
  EXPECT_EQ(details.code(), 14);
  EXPECT_EQ(details.message(), "full");
  ASSERT_EQ(details.details_size(), 1);
  EXPECT_EQ(details.details(0).type_url(),
            "type.googleapis.com/hpcai500.v1.ErrorCause");
  // Unmarked statuses carry no details at all.
  EXPECT_EQ(ToGrpcStatus(absl::UnavailableError("x")).error_details(), "");
  EXPECT_EQ(CauseOf(grpc::Status(grpc::StatusCode::UNAVAILABLE, "x", "junk")),
            v1::ErrorCause::CAUSE_UNSPECIFIED);
}

TEST(Retry, BackoffDoublesUpToItsBound) {
  RetryPolicy policy;
  policy.first_backoff = absl::Milliseconds(500);
  policy.max_backoff = absl::Seconds(3);
  EXPECT_EQ(RetryBackoff(policy, 2), absl::Milliseconds(500));
  EXPECT_EQ(RetryBackoff(policy, 3), absl::Seconds(1));
  EXPECT_EQ(RetryBackoff(policy, 4), absl::Seconds(2));
  EXPECT_EQ(RetryBackoff(policy, 5), absl::Seconds(3));
  EXPECT_EQ(RetryBackoff(policy, 60), absl::Seconds(3));
}

TEST(Retry, DefaultTriesOutlastACoordinatorRestartEvenAtTheirShortest) {
  const RetryPolicy policy;
  // Down for 10 s and a few more to start on a loaded machine.
  EXPECT_GE(RetryWindow(policy), absl::Seconds(15));
  // Tries stay close enough that one comes soon after it is back.
  EXPECT_LE(RetryBackoff(policy, policy.max_tries), absl::Seconds(4));
  // The window is the cut waits' sum: 1 + 2 + 4 * 5 s, cut by a quarter.
  EXPECT_EQ(RetryWindow(policy), absl::Milliseconds(17250));
}

TEST(Retry, RetriesUntilAnAnswerAndWaitsBetweenTries) {
  std::vector<absl::Duration> waits;
  const RetryPolicy policy = RecordingPolicy(&waits);
  int calls = 0;
  std::vector<int> announced;
  grpc::Status status = CallWithRetries(
      policy,
      [&] {
        return ++calls < 3
                   ? grpc::Status(grpc::StatusCode::UNAVAILABLE, "reset")
                   : grpc::Status::OK;
      },
      [&](int next_try, const grpc::Status& last, absl::Duration) {
        EXPECT_EQ(last.error_message(), "reset");
        announced.push_back(next_try);
      });
  EXPECT_TRUE(status.ok());
  EXPECT_EQ(calls, 3);
  EXPECT_THAT(announced, ::testing::ElementsAre(2, 3));
  ASSERT_EQ(waits.size(), 2u);
  for (size_t i = 0; i < waits.size(); ++i) {
    const absl::Duration full = RetryBackoff(policy, static_cast<int>(i) + 2);
    EXPECT_GE(waits[i], full * (1.0 - policy.max_cut)) << "cut by max_cut";
    EXPECT_LE(waits[i], full);
  }
}

TEST(Retry, GivesUpAfterMaxTriesWithTheLastStatus) {
  std::vector<absl::Duration> waits;
  RetryPolicy policy = RecordingPolicy(&waits);
  policy.max_tries = 4;
  int calls = 0;
  grpc::Status status = CallWithRetries(
      policy,
      [&] {
        ++calls;
        return grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "late");
      },
      [](int, const grpc::Status&, absl::Duration) {});
  EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_EQ(calls, 4);
  EXPECT_EQ(waits.size(), 3u);
}

TEST(Retry, AnAnsweredErrorIsReturnedAtOnce) {
  std::vector<absl::Duration> waits;
  int calls = 0;
  grpc::Status status = CallWithRetries(
      RecordingPolicy(&waits),
      [&] {
        ++calls;
        return grpc::Status(grpc::StatusCode::ALREADY_EXISTS, "other spec");
      },
      [](int, const grpc::Status&, absl::Duration) {});
  EXPECT_EQ(status.error_code(), grpc::StatusCode::ALREADY_EXISTS);
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(waits.empty());
}

}  // namespace
}  // namespace hpcai500
