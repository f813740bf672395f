// The `preflight` command of hpcai500-worker: a short, bounded measurement
// of what this node's device does, before runs are put on it (docs/design.md
// "Node health"). It measures, each for its share of --budget-ms (at least
// three repetitions, the median reported):
//   gemm_gflops           a square matrix product at --precision
//   memory_gbps           a large tensor copy on the device (bytes read +
//                         written per second)
//   h2d_gbps              pinned host memory to the device (CUDA only)
//   allreduce_busbw_gbps  a sum all-reduce between two members of a group
//                         in this process over the transport runs use
//                         (Gloo on CPU; NCCL between the first two GPUs when
//                         there are two), as bus bandwidth: bytes x
//                         2(n-1)/n per second, as NCCL's tests count it
// and prints one event line (worker/events/event_log.h), key
// hpcai500_preflight, its value the figures by name (common/event_keys.h),
// which the agent reads (agent/node/preflight_runner.h). The test slowdown
// ($HPCAI500_TEST_SLOW_STEP_PCT, worker/test_slowdown.h) stretches every
// repetition as it does a training step, so that a fault test has a slow
// node to find.
//
// Thread-safety: call from one thread; it writes to stdout and stderr.
#ifndef HPCAI500_WORKER_PREFLIGHT_H_
#define HPCAI500_WORKER_PREFLIGHT_H_

namespace hpcai500::worker {

// `hpcai500-worker preflight [--device cpu|cuda] [--precision
// fp32|bf16|fp16] [--budget-ms N] [--threads N]` (also --flag=value);
// argv[0] is the subcommand name. Returns 0 when it printed its line, 2 for
// a usage error (or a device this LibTorch or node lacks), 1 when a
// measurement failed; messages go to stderr.
int PreflightMain(int argc, char** argv);

}  // namespace hpcai500::worker

#endif  // HPCAI500_WORKER_PREFLIGHT_H_
