// The training engine of hpcai500-worker: one rank of a data-parallel run
// (c10d ProcessGroupGloo over a TCPStore rendezvous hosted by rank 0) that
// trains a registry config and reports it as event lines (docs/events.md).
//
// Thread-safety: RunWorker() and WorkerMain() own the process's LibTorch
// state (thread count, autocast); call them from one thread, once.
#ifndef HPCAI500_WORKER_ENGINE_H_
#define HPCAI500_WORKER_ENGINE_H_

#include <string>

#include "worker/event_log.h"
#include "worker/flags.h"

namespace hpcai500::worker {

// What flags alone cannot check: the model and dataset are ones this worker
// builds, the device exists, the precision runs on it. Returns an empty
// string when runnable, else the problem (the caller exits 2).
std::string CheckRunnable(const WorkerOptions& options);

// Trains as `options` says, emitting every event to `log` (borrowed for the
// call). Never throws: any exception ends the run with run_stop "aborted"
// and its reason. Returns the exit code: 0 success, 1 aborted.
int RunWorker(const WorkerOptions& options, EventLog* log);

// The whole program: flags, checks, events file, training. Returns the exit
// code (0 success, 1 aborted run, 2 bad command line or environment).
int WorkerMain(int argc, char** argv);

}  // namespace hpcai500::worker

#endif  // HPCAI500_WORKER_ENGINE_H_
