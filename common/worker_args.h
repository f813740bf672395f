// WorkerArgs: the worker's command line as one value. The agent builds the
// worker's argv with ToArgv() and the worker reads it back with FromArgv();
// both are driven by one table of (flag, field, kind, range), so a new flag
// is one field and one table row. Each field is unset unless its flag is
// given; the worker applies its defaults (worker/flags.h) to unset fields.
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

  // Ranges are those FromArgv accepts; unset means the flag is absent.
  std::optional<int64_t> epochs;            // --epochs [1, 100000]
  std::optional<int64_t> batch_size;        // --batch-size [1, 2^20], per rank
  std::optional<Precision> precision;       // --precision
  std::optional<Compression> compression;   // --compression
  std::optional<Device> device;             // --device
  std::optional<DistBackend> dist_backend;  // --dist-backend
  std::optional<int64_t> seed;              // --seed [0, 2^63 - 1]
  std::optional<std::string> events_file;   // --events-file, non-empty
  std::optional<int64_t> threads;           // --threads [1, 4096]
  std::optional<std::string> data;  // --data, non-empty: DIR or "synthetic"
  std::optional<int64_t> steps_per_epoch;  // --steps-per-epoch [1, 2^31-1]
  std::optional<int64_t> powersgd_rank;    // --powersgd-rank [1, 1024]
  std::optional<int64_t> powersgd_warmup_steps;  // [0, 1000000]
  std::optional<double> bucket_mb;               // --bucket-mb (0, 65536]
  std::optional<bool> deterministic;             // --deterministic
  std::optional<std::string> checkpoint_dir;     // non-empty
  std::optional<bool> resume;  // --resume; true needs checkpoint_dir
  std::optional<int64_t> watchdog_seconds;            // [0, 7 days]
  std::optional<int64_t> collective_timeout_seconds;  // [1, 7 days]
  std::optional<std::string> model;  // --model; the worker checks the name
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
  // --checkpoint-dir), else kArgs with *out filled.
  static ArgvOutcome FromArgv(const std::vector<std::string>& args,
                              WorkerArgs* out, std::string* error);

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
