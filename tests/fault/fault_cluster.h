// FaultCluster: a TestCluster for the fault tests, whose agents run the
// torn_line_worker stand-in, with what every fault test needs: submit a run,
// wait for it to end, count its stored events, and print the one summary
// line ("FAULT ...: lost N, stored twice M") each fault test ends with.
//
// Not thread-safe: one test thread drives it.
#ifndef HPCAI500_TESTS_FAULT_FAULT_CLUSTER_H_
#define HPCAI500_TESTS_FAULT_FAULT_CLUSTER_H_

#include <cstdint>
#include <string>

#include "tests/integration/harness.h"

namespace hpcai500::testing {

// What the store holds for one run's events.
struct StoredEventCounts {
  int64_t rows = 0;      // event rows
  int64_t distinct = 0;  // distinct (attempt, rank, seq)
  int64_t errors = 0;    // rows of refused lines
  int64_t max_seq = 0;
};

class FaultCluster : public TestCluster {
 public:
  // The events the stand-in worker writes per rank (torn_line_worker.cc).
  static constexpr int64_t kWorkerEvents = 6000;

  // Starts an agent `name` with one slot whose worker is the stand-in.
  bool StartFakeAgent(const std::string& name);
  // Submits a one-rank run; seed 1 writes whole lines only, another seed
  // tears one line. Returns the run id ("" on failure).
  std::string SubmitRun(const std::string& name, int seed);
  // Waits up to `timeout` for the run to leave QUEUED/RUNNING; returns its
  // last state ("" when `show` failed).
  std::string WaitForEnd(const std::string& run_id,
                         std::chrono::seconds timeout);
  // Counts the run's events straight from the database file (read-only).
  StoredEventCounts CountStoredEvents(const std::string& run_id);
};

// Prints the fault tests' summary line to stdout and returns it.
std::string PrintFaultSummary(const std::string& fault,
                              const std::string& what_happened,
                              int64_t events_lost, int64_t stored_twice);

}  // namespace hpcai500::testing

#endif  // HPCAI500_TESTS_FAULT_FAULT_CLUSTER_H_
