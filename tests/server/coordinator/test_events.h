// Event lines for the server's unit tests, in the worker's format.
#ifndef HPCAI500_TESTS_SERVER_COORDINATOR_TEST_EVENTS_H_
#define HPCAI500_TESTS_SERVER_COORDINATOR_TEST_EVENTS_H_

#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/events.h"

namespace hpcai500::testing {

// ":::MLLOG {...}" with `key`, `value` (JSON text), and metadata rank, seq
// and, when epoch >= 0, epoch_num.
inline std::string MllogLine(const std::string& key, const std::string& value,
                             int rank, int64_t seq, int epoch = -1,
                             int64_t time_ms = 1000) {
  std::string metadata = absl::StrCat("\"seq\": ", seq, ", \"rank\": ", rank);
  if (epoch >= 0) absl::StrAppend(&metadata, ", \"epoch_num\": ", epoch);
  return absl::StrCat(":::MLLOG {\"namespace\": \"\", \"time_ms\": ", time_ms,
                      ", \"event_type\": \"POINT_IN_TIME\", \"key\": \"", key,
                      "\", \"value\": ", value, ", \"metadata\": {", metadata,
                      "}}");
}

// The parsed form of MllogLine(...); aborts the test binary on a bad line.
inline EventLine Event(const std::string& key, const std::string& value,
                       int rank, int64_t seq, int epoch = -1) {
  return *ParseEventLine(MllogLine(key, value, rank, seq, epoch));
}

// hpcai500_epoch_stats of `rank` for `epoch`.
inline EventLine EpochStats(int rank, int64_t seq, int epoch, int64_t samples,
                            double seconds, double loss) {
  return Event("hpcai500_epoch_stats",
               absl::StrCat("{\"samples\": ", samples, ", \"seconds\": ",
                            seconds, ", \"train_loss\": ", loss, "}"),
               rank, seq, epoch);
}

}  // namespace hpcai500::testing

#endif  // HPCAI500_TESTS_SERVER_COORDINATOR_TEST_EVENTS_H_
