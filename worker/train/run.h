// One rank's whole run as hpcai500-worker does it: the checks flags alone
// cannot make, then the Trainer (worker/train/trainer.h), with every
// exception turned into run_stop "aborted" and an exit code. The trainer
// runs on Gloo (CPU) or NCCL (CUDA) over a TCPStore rendezvous hosted by
// rank 0, and reports as event lines (docs/events.md).
//
// Thread-safety: RunWorker() owns the process's LibTorch state (thread
// count, autocast); call it from one thread, once.
#ifndef HPCAI500_WORKER_TRAIN_RUN_H_
#define HPCAI500_WORKER_TRAIN_RUN_H_

#include <string>

#include "worker/events/event_log.h"
#include "worker/flags.h"

namespace hpcai500::worker {

// What flags alone cannot check: the model and dataset are ones this worker
// builds (a noop config has none), the fast paths asked for can take this
// run, the device exists, the precision runs on it. Returns an empty
// string when runnable, else the problem (the caller exits 2).
std::string CheckRunnable(const WorkerOptions& options);

// Trains as `options` says (a noop config: RunNoop, worker/train/noop.h),
// emitting every event to `log` (borrowed for the call). Never throws: any
// exception ends the run with run_stop "aborted" and its reason. Returns the
// exit code: 0 success, 1 aborted. With --lease-file, the process ends with
// kLeaseExpiredExitCode (common/worker_lease.h) once the lease ran out.
int RunWorker(const WorkerOptions& options, EventLog* log);

}  // namespace hpcai500::worker

#endif  // HPCAI500_WORKER_TRAIN_RUN_H_
