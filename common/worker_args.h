// WorkerArgs: the worker's command line as one value. The agent builds the
// worker's argv with ToArgv() and the worker reads it back with FromArgv(),
// fills what was not given with FillDefaults() and prints Usage(); all are
// driven by one table of (flag, field, kind, range, default, usage), so a new
// flag is one field and one table row. Ranges shared with run specs come
// from common/limits.h. Each field is unset unless its flag is given.
// Standard library only: the worker links it without abseil or protobuf.
//
// Thread-safe: a plain value; the functions touch nothing shared.
#ifndef HPCAI500_COMMON_WORKER_ARGS_H_
#define HPCAI500_COMMON_WORKER_ARGS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/vocabulary.h"

namespace hpcai500 {

// --mllog-submission org=ORG,platform=PLATFORM[,status=STATUS]: MLPerf's
// submission keys for the compliance checker.
struct MllogSubmission {
  std::string org;                // non-empty
  std::string platform;           // non-empty
  std::string status = "onprem";  // onprem | cloud | preview | research

  bool operator==(const MllogSubmission& other) const;
};

enum class ArgvOutcome { kArgs, kHelp, kError };

struct WorkerArgs {
  // Required: the registry config to train.
  std::string workload;  // --workload
  std::string config;    // --config

  // Ranges are those FromArgv accepts (the table in worker_args.cc); unset
  // means the flag is absent. "= D": FillDefaults() sets D when unset.
  std::optional<int64_t> epochs;            // [1, kMaxEpochs]
  std::optional<int64_t> batch_size;        // [1, kMaxBatchSize], per rank
  std::optional<Precision> precision;       // = fp32
  std::optional<Compression> compression;   // = none
  std::optional<Device> device;             // = cpu
  std::optional<DistBackend> dist_backend;  // = gloo
  std::optional<int64_t> seed;              // [0, kMaxWorkerSeed] = 42
  std::optional<std::string> events_file;   // non-empty; unset: stdout only
  std::optional<int64_t> threads;           // [1, kMaxThreads] = 1
  std::optional<std::string> data;          // non-empty: DIR or "synthetic"
  std::optional<int64_t> steps_per_epoch;   // [1, 2^31-1]; unset: all
  std::optional<int64_t> powersgd_rank;     // [1, 1024] = 1
  std::optional<int64_t> powersgd_warmup_steps;  // [0, 1000000] = 100
  std::optional<double> bucket_mb;               // (0, 65536] = 25
  std::optional<bool> deterministic;             // = false
  // The fast paths (common/fast_paths.h), each needing --device cuda.
  std::optional<bool> fused_bn;               // = false
  std::optional<bool> cuda_graph;             // = false
  std::optional<bool> gpu_decode;             // = false
  std::optional<std::string> checkpoint_dir;  // non-empty; unset: none
  std::optional<bool> resume;  // = false; true needs checkpoint_dir
  std::optional<int64_t> watchdog_seconds;            // [0, 7 days] = 300
  std::optional<int64_t> collective_timeout_seconds;  // [1, 7 days] = 180
  std::optional<std::string> lease_file;  // non-empty; unset: no lease
  // What the agent runs the worker for (both unset when run by hand): a
  // checkpoint's manifest names them (common/checkpoint_manifest.h).
  std::optional<int64_t> run_id;     // [1, 2^62]
  std::optional<int64_t> attempt;    // [1, 1000000]
  std::optional<std::string> model;  // the worker checks the name
  std::optional<MllogSubmission> mllog_submission;

  // The flags of every set field, in the table's order ("--workload", W,
  // "--config", C, "--epochs", "3", ...); a true bool stands alone. Without
  // the program name. FromArgv(ToArgv()) gives back an equal WorkerArgs
  // when every set field is within FromArgv's rules.
  std::vector<std::string> ToArgv() const;

  // Parses `args` (argv without the program name): "--flag value" or
  // "--flag=value"; bool flags also stand alone, meaning true; a repeated
  // flag keeps its last value. Returns kHelp on --help or -h, kError with
  // *error naming the flag at fault (unknown, missing value, out of range,
  // not one of its values, --workload or --config missing, --resume without
  // --checkpoint-dir, a fast path without --device cuda), else kArgs with
  // *out filled.
  static ArgvOutcome FromArgv(const std::vector<std::string>& args,
                              WorkerArgs* out, std::string* error);

  // The table's flag names without "--" ("batch-size"), in its order.
  static std::vector<std::string> FlagNames();

  // Sets the field of --`flag` from `text` by the rule FromArgv applies.
  // False with *error naming the flag when `flag` is not in the table or
  // `text` breaks its rule ("--epochs: '0' is not an integer in [1, ...]").
  bool Set(const std::string& flag, const std::string& text,
           std::string* error);

  // Sets every unset field that has a default in the table to it; the
  // others (workload, config, epochs, paths, ...) stay as they are.
  void FillDefaults();

  // WorkerArgs with only the table's defaults set.
  static WorkerArgs Defaults();

  // "usage: <program> --workload W --config C [--epochs N] ...": every flag
  // with its values (an enum's names joined by '|') and its note, wrapped
  // at 80 columns, ending in a newline.
  static std::string Usage(const std::string& program);

  // The names of the fast paths (common/fast_paths.h) set true, in
  // kFastPaths' order ("fused_bn", "cuda_graph"); empty when none.
  std::vector<std::string> FastPathsOn() const;

  // Field by field, over the same table.
  bool operator==(const WorkerArgs& other) const;
  bool operator!=(const WorkerArgs& other) const { return !(*this == other); }
};

// The name of the checkpoint a worker writes for `epoch` (>= 0) in its
// --checkpoint-dir: "checkpoint-epoch-NNNNNN.pt", at least 6 digits, zero
// padded. The agent links a resumed attempt's checkpoint under this name.
std::string CheckpointFileName(int64_t epoch);

}  // namespace hpcai500

#endif  // HPCAI500_COMMON_WORKER_ARGS_H_
