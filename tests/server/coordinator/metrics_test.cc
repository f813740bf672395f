#include "server/coordinator/metrics.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hpcai500 {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(Metrics, WritesEveryGaugeWithHelpAndType) {
  MetricsSnapshot snapshot;
  snapshot.runs_by_state = {{v1::RUN_STATE_RUNNING, 2},
                            {v1::RUN_STATE_SUCCEEDED, 5}};
  snapshot.queue_length = 3;
  snapshot.nodes_connected = 1;
  snapshot.nodes_known = 4;
  snapshot.events_ingested = 1234;
  const std::string text = PrometheusText(snapshot);
  EXPECT_THAT(text, HasSubstr("# TYPE hpcai500_runs gauge\n"));
  EXPECT_THAT(text, HasSubstr("hpcai500_runs{state=\"running\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("hpcai500_runs{state=\"succeeded\"} 5\n"));
  EXPECT_THAT(text, HasSubstr("hpcai500_runs{state=\"queued\"} 0\n"))
      << "a state with no run still has its line";
  EXPECT_THAT(text, Not(HasSubstr("unspecified")));
  EXPECT_THAT(text, HasSubstr("\nhpcai500_queue_length 3\n"));
  EXPECT_THAT(text, HasSubstr("\nhpcai500_nodes_connected 1\n"));
  EXPECT_THAT(text, HasSubstr("\nhpcai500_nodes_known 4\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE hpcai500_events_ingested_total counter\n"
                              "hpcai500_events_ingested_total 1234\n"));
}

TEST(Metrics, WritesIngestLagAndSchedulerPassHistograms) {
  MetricsSnapshot snapshot;
  Histogram lag({1, 10});
  lag.Observe(0.5);
  lag.Observe(4);
  snapshot.ingest_lag = lag.Read();
  snapshot.scheduler_pass = Histogram({0.001}).Read();
  const std::string text = PrometheusText(snapshot);
  EXPECT_THAT(text,
              HasSubstr("# TYPE hpcai500_ingest_lag_seconds histogram\n"
                        "hpcai500_ingest_lag_seconds_bucket{le=\"1\"} 1\n"
                        "hpcai500_ingest_lag_seconds_bucket{le=\"10\"} 2\n"
                        "hpcai500_ingest_lag_seconds_bucket{le=\"+Inf\"} "
                        "2\n"
                        "hpcai500_ingest_lag_seconds_sum 4.5\n"
                        "hpcai500_ingest_lag_seconds_count 2\n"));
  EXPECT_THAT(text,
              HasSubstr("# TYPE hpcai500_scheduler_pass_seconds histogram\n"));
  EXPECT_THAT(text, HasSubstr("hpcai500_scheduler_pass_seconds_count 0\n"));
}

}  // namespace
}  // namespace hpcai500
