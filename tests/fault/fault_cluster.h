// FaultCluster: a TestCluster for the fault tests, with what every fault
// test needs: agents with the real worker (slowed or not) or the
// torn_line_worker stand-in, submit a run and wait until it trains or ends,
// count its stored events against what the workers wrote, and print the one
// summary line ("FAULT ...: lost N, stored twice M") each fault test ends
// with. Its files are kept when the test that owns it fails.
//
// Not thread-safe: one test thread drives it.
#ifndef HPCAI500_TESTS_FAULT_FAULT_CLUSTER_H_
#define HPCAI500_TESTS_FAULT_FAULT_CLUSTER_H_

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "tests/integration/harness.h"

namespace hpcai500::testing {

// What the store holds for one run's events.
struct StoredEventCounts {
  int64_t rows = 0;      // event rows
  int64_t distinct = 0;  // distinct (attempt, rank, seq)
  int64_t errors = 0;    // rows of refused lines
  int64_t max_seq = 0;

  // Rows beyond the first of each (attempt, rank, seq).
  int64_t stored_twice() const { return rows - distinct; }
};

class FaultCluster : public TestCluster {
 public:
  // The events the stand-in worker writes per rank (torn_line_worker.cc).
  static constexpr int64_t kWorkerEvents = 6000;

  // Keeps the files (KeepFiles) when the running test has failed, also
  // when it returned early.
  ~FaultCluster();

  // Starts hpcai500d with `--node-timeout-s node_timeout_s` and agents
  // node-a and node-b (one slot each, the real worker) sharing the
  // checkpoint root SharedCheckpointRoot(); false when one did not start.
  bool StartWithSharedCheckpoints(const std::string& node_timeout_s);
  std::string SharedCheckpointRoot() const {
    return dir() + "/shared-checkpoints";
  }
  // Starts an agent `name` with one slot whose worker is the stand-in.
  bool StartFakeAgent(const std::string& name);
  // Starts an agent `name` with one slot whose real worker sleeps
  // `slow_step_pct`% of each step's time (300: four times as long per step),
  // so that a run still trains through a fault; false when it did not
  // register. With `slow_while_file`, only while that file exists
  // (worker/test_slowdown.h). LaunchSlowAgent does not wait for it.
  bool StartSlowAgent(const std::string& name, int slow_step_pct = 300,
                      const std::string& slow_while_file = "");
  void LaunchSlowAgent(const std::string& name);
  // The spec file (TestCluster::WriteSpec) of a run of `nodes` one-rank
  // nodes: seed 1 is a Fashion-MNIST smoke run for the real worker and
  // writes whole lines in the stand-in, another seed tears one line there.
  std::string WriteRunSpec(const std::string& name, int seed, int nodes = 1);
  // Submits the run of WriteRunSpec. Returns the run id ("" on failure).
  // `extra_yaml` ("launcher: mpirun\n") is appended to the spec.
  std::string SubmitRun(const std::string& name, int seed, int nodes = 1,
                        const std::string& extra_yaml = "");
  // Submits a one-rank Fashion-MNIST smoke run (2 epochs) for the real
  // worker. Returns the run id ("" on failure).
  std::string SubmitSmokeRun(const std::string& name);
  // Submits the smoke run, which goes to node-a (the first node by name),
  // and waits up to 120 s until it trains (its run_start stored once).
  // Returns the run id, "" when it was not submitted or did not train; sets
  // *worker (when not null) to its rank 0's pid on node-a, 0 when none.
  std::string SubmitSmokeRunAndWaitUntilTraining(const std::string& name,
                                                 pid_t* worker);
  // The same, waiting up to 120 s until it checkpointed epoch 1 (an
  // hpcai500_checkpoint event stored).
  std::string SubmitSmokeRunAndWaitUntilCheckpointed(const std::string& name);
  // Starts hpcai500d with `--node-timeout-s node_timeout_s` and a slowed
  // node-a (StartSlowAgent), then SubmitSmokeRunAndWaitUntilTraining. Returns
  // the run id, "" when a step failed (a test failure names it).
  std::string StartSlowTraining(const std::string& node_timeout_s,
                                const std::string& name, pid_t* worker,
                                int slow_step_pct = 300,
                                const std::string& slow_while_file = "");
  // `hpcai500 show RUN --json`, parsed; null when it failed.
  nlohmann::json ShowRun(const std::string& run_id);
  // Waits up to `timeout` for the run to end (succeeded, failed or
  // cancelled); returns its last state ("" when `show` failed).
  std::string WaitForEnd(const std::string& run_id,
                         std::chrono::seconds timeout);
  // Counts the run's events (of one attempt, or of all when attempt is 0)
  // straight from the database file (read-only).
  StoredEventCounts CountStoredEvents(const std::string& run_id,
                                      int attempt = 0);
  // How many stored lines of the run's `attempt` carry event `key`.
  int64_t CountStoredKey(const std::string& run_id, int attempt,
                         const std::string& key);
  // How many results the run has stored (a run is scored once).
  int64_t CountResults(const std::string& run_id);
  // How many runs the store holds.
  int64_t CountRuns();

  // The folder of `attempt` of `run_id` in agent `name`'s workdir, and the
  // path of one of its rank files: RankFile(..., 0, ".events") is
  // "<AttemptDir>/rank-0.events".
  std::string AttemptDir(const std::string& name, const std::string& run_id,
                         int attempt) const;
  std::string RankFile(const std::string& name, const std::string& run_id,
                       int attempt, int rank, const std::string& suffix) const;
  // The pid in the pid file of `rank` of that attempt (0 when none).
  pid_t WorkerPid(const std::string& name, const std::string& run_id,
                  int attempt, int rank) const;
  // Events that rank wrote but the store lacks: the lines of its events
  // file, or only up to its acknowledged seq when `acked_only` (what an
  // agent lost with its node may not have sent), minus the distinct seqs
  // stored for it.
  int64_t LostEvents(const std::string& name, const std::string& run_id,
                     int attempt, int rank, bool acked_only);
  // Waits up to `timeout` until LostEvents(name, run_id, attempt, rank,
  // acked_only=false) is 0: every line that rank wrote is stored.
  bool WaitUntilAllStored(const std::string& name, const std::string& run_id,
                          int attempt, int rank, std::chrono::seconds timeout);
  // Waits up to `timeout` until agent `name` has had every event of that
  // rank acknowledged (its ".done" file); false when it has not.
  bool WaitUntilAllAcked(const std::string& name, const std::string& run_id,
                         int attempt, int rank, std::chrono::seconds timeout);
  // Of seqs 1..`seq` of `rank` in `attempt`, how many the store lacks.
  int64_t MissingUpTo(const std::string& run_id, int attempt, int rank,
                      int64_t seq);
  // The highest seq agent `name` has had acknowledged for that rank (0 when
  // none).
  int64_t AckedSeq(const std::string& name, const std::string& run_id,
                   int attempt, int rank) const;

  // Expects the run's events, of every attempt, stored once: more than 20
  // distinct (real rows, not an empty store), none twice, `events_lost` 0;
  // prints the summary line. Returns what the store holds.
  StoredEventCounts ExpectStoredOnce(const std::string& run_id,
                                     int64_t events_lost,
                                     const std::string& fault,
                                     const std::string& what_happened);
  // For a run of one attempt on node-a: expects node-a's agent to have every
  // event of rank 0 acknowledged within 30 s, then ExpectStoredOnce with
  // the lines of its events file the store lacks as the events lost.
  StoredEventCounts ExpectAckedAndStoredOnce(const std::string& run_id,
                                             const std::string& fault,
                                             const std::string& what_happened);

 private:
  // Submits the smoke run and waits up to 120 s until `enough` holds for the
  // count of its attempt 1's stored lines with event `key`; the run id, ""
  // when it was not submitted or the wait ran out.
  std::string SubmitSmokeRunAndWaitUntil(
      const std::string& name, const std::string& key,
      const std::function<bool(int64_t)>& enough);
};

// Prints the fault tests' summary line to stdout and returns it.
std::string PrintFaultSummary(const std::string& fault,
                              const std::string& what_happened,
                              int64_t events_lost, int64_t stored_twice);
// Prints the summary line and expects `events_lost` and `stored_twice` to
// be 0.
void ExpectNoneLostOrStoredTwice(const std::string& fault,
                                 const std::string& what_happened,
                                 int64_t events_lost, int64_t stored_twice);
// The same line for a fault whose figures are not events: "FAULT fault:
// what happened; figures".
std::string PrintFaultFigures(const std::string& fault,
                              const std::string& what_happened,
                              const std::string& figures);

}  // namespace hpcai500::testing

#endif  // HPCAI500_TESTS_FAULT_FAULT_CLUSTER_H_
