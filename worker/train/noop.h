// The noop workload's rank (methodology/registry.h kNoopWorkload): the same
// rendezvous and event file as training, with nothing trained in between.
// It measures dispatch (submit to start to exit) and checks that a node can
// run a worker and join a process group (`hpcai500 check NODE`).
//
// Thread-safety: call from one thread, once per process.
#ifndef HPCAI500_WORKER_TRAIN_NOOP_H_
#define HPCAI500_WORKER_TRAIN_NOOP_H_

#include "worker/events/event_log.h"
#include "worker/flags.h"

namespace hpcai500::worker {

// Runs one noop rank: init_start, the run's setup events (hpcai500_unranked
// says why it never ranks), init_stop, run_start, then one epoch that is the
// rendezvous (Collectives: a TCPStore hosted by rank 0, then Gloo on CPU or
// NCCL on CUDA) and an all-reduce of one number (checked to equal the world
// size), reported with zero samples and zero FLOPs, and run_stop "success".
// Builds no model and reads no data. Throws on a failed rendezvous or
// collective; the caller ends the run. `options` and `log` are borrowed for
// the call.
void RunNoop(const WorkerOptions& options, EventLog* log);

}  // namespace hpcai500::worker

#endif  // HPCAI500_WORKER_TRAIN_NOOP_H_
