// The data-parallel plumbing of the trainer: the c10d process group of a
// run (Collectives, with the model-state collectives built on it), the gradient
// all-reduce that overlaps backward (GradientReducer, with fp16 / bf16 /
// PowerSGD compression), and the stall watchdog that ends a rank stuck in a
// collective.
//
// Thread-safety: see each class.
#ifndef HPCAI500_WORKER_DISTRIBUTED_DISTRIBUTED_H_
#define HPCAI500_WORKER_DISTRIBUTED_DISTRIBUTED_H_

#include <torch/torch.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <utility>
#include <vector>

#include "worker/flags.h"

namespace hpcai500::worker {

// What the process group cannot do with these options: --dist-backend nccl
// needs --device cuda (NCCL carries CUDA tensors only) and, with more than
// one rank, a LibTorch built with NCCL; --compression bf16 over Gloo needs
// LibTorch >= 2.2. Returns "" when fine, else the problem.
std::string CheckCommunication(const WorkerOptions& options);

// The data-parallel group of a run over options.args.dist_backend: Gloo (CPU or
// CUDA tensors; ranks may share one GPU) or NCCL (CUDA tensors, one GPU per
// rank). A world of one has no process group and every collective is the
// identity. Every collective gives up after the timeout, so a rank whose
// peer died fails instead of hanging.
//
// Thread-compatible: collectives must be issued in the same order on every
// rank; the c10d group itself may be used from several threads.
class Collectives {
 public:
  // Rendezvous over a TCPStore hosted by rank 0 at MASTER_ADDR:MASTER_PORT,
  // with options.args.collective_timeout_seconds; `device` is the rank's device
  // (NCCL moves CPU tensors through it). Throws on failure, and
  // std::invalid_argument for NCCL without it in this LibTorch.
  Collectives(const WorkerOptions& options, const torch::Device& device);

  // A group over an existing store (tests: a HashStore shared by threads);
  // Gloo binds to 127.0.0.1.
  Collectives(c10::intrusive_ptr<c10d::Store> store, int rank, int world_size,
              std::chrono::milliseconds timeout,
              DistBackend backend = DistBackend::kGloo,
              const torch::Device& device = torch::kCPU);
  // Shuts the group down (NCCL warns when destroyed without it).
  ~Collectives();
  Collectives(const Collectives&) = delete;
  Collectives& operator=(const Collectives&) = delete;

  int rank() const { return rank_; }
  int world_size() const { return world_size_; }
  DistBackend backend() const { return backend_; }
  std::chrono::milliseconds timeout() const { return timeout_; }
  // True when the backend carries bfloat16 allreduces.
  bool SupportsBFloat16() const;

  // Sums a tensor over all ranks, in place. Any device: under NCCL a CPU
  // tensor is summed in a copy on the rank's device and copied back.
  void AllReduceSum(torch::Tensor& t);
  // Starts summing `t` in place over all ranks; wait on the result. Null
  // (nothing to wait for) in a world of one. Under NCCL `t` must be a CUDA
  // tensor (std::invalid_argument otherwise).
  c10::intrusive_ptr<c10d::Work> AllReduceSumAsync(torch::Tensor& t);
  // Replaces a tensor by rank 0's, in place; any device, as AllReduceSum.
  void BroadcastFromRank0(torch::Tensor& t);

 private:
  void Init(c10::intrusive_ptr<c10d::Store> store, bool loopback);
  // `t` on a device the backend carries: itself, or under NCCL a CPU
  // tensor's copy on device_.
  torch::Tensor OnWire(const torch::Tensor& t) const;

  // Constant after construction.
  const int rank_;
  const int world_size_;
  const std::chrono::milliseconds timeout_;
  const DistBackend backend_;
  const torch::Device device_;
  // ProcessGroupGloo and ProcessGroupNCCL are c10d Backends (LibTorch 2.0 on).
  c10::intrusive_ptr<c10d::Backend> group_;
};

// Model state across the ranks of `collectives` (borrowed for the call).
// Collective: every rank calls each in the same order.

// Copies rank 0's parameters and buffers of `module` to every rank, in place.
void BroadcastModuleState(Collectives& collectives, torch::nn::Module& module);

// Replaces the floating-point buffers of `module` (BatchNorm running
// statistics) by their mean over the ranks, so every rank evaluates the same
// model.
void AverageFloatBuffers(Collectives& collectives, torch::nn::Module& module);

// Every rank's `rows` (row-major, `width` values a row) concatenated in rank
// order, as a CPU float64 [N, width] tensor: the row counts are summed into
// one vector, then each rank's rows are placed in its slot of a zero tensor
// sized for the largest and summed.
torch::Tensor GatherRows(Collectives& collectives,
                         const std::vector<double>& rows, int64_t width);

struct ReducerOptions {
  Compression compression = Compression::kNone;
  int powersgd_rank = 1;
  double bucket_mb = 25;
  // powersgd: the first steps go uncompressed (the low-rank approximation
  // and its error feedback start from a trained-in gradient, as PyTorch's
  // start_powerSGD_iter does).
  int64_t powersgd_warmup_steps = 0;
  uint64_t powersgd_seed = 20240601;  // same on every rank
  // The steps may be captured as a CUDA graph (--cuda-graph): waits on the
  // all-reduces block no host thread (a captured wait cannot poll the
  // timeout; the stall watchdog still ends a rank stuck in a replay), and
  // PowerSGD is refused (std::invalid_argument): its warm-up switch and its
  // Gram-Schmidt's host-side loop decide per step on the host.
  bool capturable = false;
};

// What a GradientReducer carries from one step to the next under PowerSGD,
// by parameter index (undefined tensors where a parameter is not
// compressed): the steps taken (warm-up counts them), the warm-started Q
// (the same on every rank) and this rank's error feedback (its own).
struct PowerSgdState {
  int64_t steps = 0;
  std::vector<torch::Tensor> q;
  std::vector<torch::Tensor> error;
};

// Communication of one or more steps.
struct CommStats {
  int64_t bytes = 0;          // payload this rank contributed to allreduces
  double wait_seconds = 0;    // the training thread blocked on them
  int64_t buckets_early = 0;  // buckets launched while backward still ran
  int64_t buckets = 0;        // buckets launched in all
};

// Averages gradients over the ranks in buckets while backward runs: hooks
// on the parameters' gradient accumulators mark gradients ready; a bucket
// (filled in reverse parameter order up to bucket_mb) whose gradients are
// all ready is flattened, scaled by local / global samples and all-reduced
// asynchronously (buckets launch in index order on every rank).
// FinishStep() launches what backward did not reach (unused parameters, or
// a rank without samples this step: zeros), waits, and writes the weighted
// mean back into each parameter's grad.
//
// Compression: fp16 / bf16 cast each bucket for the wire. powersgd (rank r)
// sends, for each matrix-shaped gradient M (reshaped to [rows, rest]) where
// r * (rows + cols) < rows * cols, P = M Q and then Q = M^T P (P made
// orthonormal in between) and uses P Q^T, keeping M - P P^T M as error
// feedback added to the next step's M; other gradients go uncompressed.
//
// Thread-safety: BeginStep/FinishStep from the training thread; the hooks
// run on autograd's threads during backward, between them. Not reentrant.
class GradientReducer {
 public:
  // `params` are borrowed handles to the model's parameters (all on one
  // device); `collectives` must outlive the reducer. Throws
  // std::invalid_argument for a compression the backend cannot carry.
  GradientReducer(Collectives* collectives, std::vector<torch::Tensor> params,
                  const ReducerOptions& options);
  ~GradientReducer();
  GradientReducer(const GradientReducer&) = delete;
  GradientReducer& operator=(const GradientReducer&) = delete;

  // Call before backward: agrees on this step's global sample count
  // (`local_samples` from this rank; 0 when its shard ran out, and then it
  // runs no backward). A caller that knows the count (every rank's batch is
  // full) passes it as `global_samples`: no collective, no host sync.
  void BeginStep(int64_t local_samples,
                 std::optional<int64_t> global_samples = std::nullopt);
  // Call after backward (or instead of it when local_samples was 0).
  void FinishStep();

  // Totals since construction.
  CommStats stats() const;
  // Adds `step` (what one captured step sent) to the totals: a replayed
  // step runs none of the host code that counts.
  void CountReplayedStep(const CommStats& step);
  // Number of buckets and their parameter indices (for tests).
  const std::vector<std::vector<size_t>>& buckets() const { return buckets_; }
  // PowerSGD error feedback of parameter `i` (undefined when it is not
  // compressed) — for tests.
  torch::Tensor PowerSgdError(size_t i) const;
  // A copy of the PowerSGD state (a checkpoint saves it per rank); empty
  // vectors when the reducer does not compress. Between steps only.
  PowerSgdState powersgd_state() const;
  // Continues from `state` (a checkpoint's): the next step is the one the
  // saved reducer would have taken. Throws std::invalid_argument naming the
  // parameter when its compressed parameters or their shapes differ.
  void RestorePowerSgd(const PowerSgdState& state);

 private:
  struct Bucket {
    std::vector<size_t> params;
    int64_t numel = 0;
    size_t ready = 0;
    bool launched = false;
    torch::Tensor wire;  // what goes on the wire (phase 1)
    c10::intrusive_ptr<c10d::Work> work;
  };
  struct PowerSgdMatrix {
    bool compressed = false;
    int64_t rows = 0, cols = 0;
    torch::Tensor q;      // [cols, r], warm-started
    torch::Tensor error;  // [rows, cols]
    torch::Tensor m;      // this step's M (grad + error)
    torch::Tensor p;      // this step's P
  };

  // Construction steps: refuse bad options (std::invalid_argument), group
  // parameters into buckets, set up PowerSGD's matrices, hook backward.
  void CheckOptions() const;
  void AssignBuckets();
  void InitPowerSgd();
  void InstallHooks();
  void OnGradReady(size_t param);
  void LaunchReadyBuckets();   // requires mu_
  void Launch(size_t bucket);  // requires mu_
  torch::Tensor LocalGrad(size_t param) const;
  void WriteBack(size_t param, const torch::Tensor& mean);
  void FinishPowerSgd();

  // Constant after construction.
  Collectives* const collectives_;
  const std::vector<torch::Tensor> params_;
  const ReducerOptions options_;
  const bool active_;  // world > 1
  std::vector<std::vector<size_t>> buckets_;
  std::vector<size_t> bucket_of_;
  // What grad_accumulator() returns: a shared_ptr up to LibTorch 2.13, an
  // intrusive pointer from 2.14.
  using AccumulatorPtr = decltype(torch::autograd::impl::grad_accumulator(
      std::declval<const torch::Tensor&>()));
  std::vector<AccumulatorPtr> accumulators_;
  std::vector<uintptr_t> hook_keys_;

  mutable std::mutex mu_;
  std::vector<Bucket> state_;             // Guarded by mu_.
  std::vector<bool> grad_ready_;          // Guarded by mu_.
  size_t next_launch_ = 0;                // Guarded by mu_.
  bool in_step_ = false;                  // Guarded by mu_.
  int64_t steps_ = 0;                     // finished steps; Guarded by mu_.
  bool compressing_ = false;              // PowerSGD this step; Guarded by mu_.
  double scale_ = 1;                      // local / global; Guarded by mu_.
  std::vector<PowerSgdMatrix> powersgd_;  // Guarded by mu_.
  CommStats stats_;                       // Guarded by mu_.
};

// Ends the process when the training thread stops making progress: the
// thread calls Beat() at every step (and batch of evaluation) and names
// what it is doing with SetPhase(); when no Beat() comes for `timeout`,
// `on_stall` runs once with "watchdog: no progress for N s (stuck in
// PHASE)". The default on_stall of the worker writes run_stop and exits 1.
//
// Thread-safe: Beat() and SetPhase() are lock-free; the phase must be a
// string literal (or otherwise outlive the watchdog).
class StallWatchdog {
 public:
  using OnStall = std::function<void(const std::string& reason)>;
  // timeout of 0: disabled (no thread).
  StallWatchdog(std::chrono::milliseconds timeout, OnStall on_stall);
  ~StallWatchdog();
  StallWatchdog(const StallWatchdog&) = delete;
  StallWatchdog& operator=(const StallWatchdog&) = delete;

  void Beat() { beats_.fetch_add(1, std::memory_order_relaxed); }
  void SetPhase(const char* phase) {
    phase_.store(phase, std::memory_order_relaxed);
  }
  bool fired() const { return fired_.load(); }

 private:
  void Loop();

  const std::chrono::milliseconds timeout_;
  const OnStall on_stall_;
  std::atomic<uint64_t> beats_{0};
  std::atomic<const char*> phase_{"startup"};
  std::atomic<bool> fired_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;  // Guarded by mu_.
  std::thread thread_;
};

}  // namespace hpcai500::worker

#endif  // HPCAI500_WORKER_DISTRIBUTED_DISTRIBUTED_H_
