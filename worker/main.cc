// hpcai500-worker: trains one rank of a benchmark run (worker/train/run.h),
// or, as `hpcai500-worker make-ewa ...`, writes a synthetic Extreme Weather
// file in the dataset's layout (worker/data/make_ewa.h), or, as
// `hpcai500-worker --version`, prints what it is (worker/version.h), or, as
// `hpcai500-worker preflight ...`, measures the node (worker/preflight.h).
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "worker/data/make_ewa.h"
#include "worker/events/event_log.h"
#include "worker/flags.h"
#include "worker/preflight.h"
#include "worker/train/run.h"
#include "worker/version.h"

namespace hpcai500::worker {
namespace {

// The training program: flags, checks, events file, training. Returns the
// exit code (0 success, 1 aborted run, 2 bad command line or environment;
// 75, kLeaseExpiredExitCode, from inside RunWorker: fenced by its lease).
int WorkerMain(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  WorkerOptions options;
  std::string error;
  switch (ParseWorkerFlags(args, Registry::Builtin(), ProcessEnv(),
                           std::thread::hardware_concurrency(), &options,
                           &error)) {
    case ParseOutcome::kHelp:
      std::fputs(WorkerUsage().c_str(), stdout);
      return 0;
    case ParseOutcome::kError:
      std::fprintf(stderr, "hpcai500-worker: %s\n%s", error.c_str(),
                   WorkerUsage().c_str());
      return 2;
    case ParseOutcome::kRun:
      break;
  }
  if (std::string problem = CheckRunnable(options); !problem.empty()) {
    std::fprintf(stderr, "hpcai500-worker: %s\n", problem.c_str());
    return 2;
  }
  std::unique_ptr<EventLog> log =
      EventLog::Open(options.args.events_file.value_or(""), options.rank,
                     stdout, EventLog::SystemClockMs, &error);
  if (!log) {
    std::fprintf(stderr, "hpcai500-worker: %s\n", error.c_str());
    return 2;
  }
  return RunWorker(options, log.get());
}

}  // namespace
}  // namespace hpcai500::worker

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "--version") == 0) {
    std::fputs(hpcai500::worker::VersionLines().c_str(), stdout);
    return 0;
  }
  if (argc > 1 && std::strcmp(argv[1], "make-ewa") == 0) {
    return hpcai500::worker::MakeEwaMain(argc - 1, argv + 1);
  }
  if (argc > 1 && std::strcmp(argv[1], "preflight") == 0) {
    return hpcai500::worker::PreflightMain(argc - 1, argv + 1);
  }
  return hpcai500::worker::WorkerMain(argc, argv);
}
