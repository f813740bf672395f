// The Trainer runs one rank of a data-parallel run: it opens the config's
// data (worker/data/open_dataset.h), builds its Task (worker/train/task.h),
// joins the process group (Gloo on CPU, NCCL on CUDA), trains the epoch
// budget with the gradient all-reduce overlapping backward, evaluates after
// every epoch, checkpoints and resumes, and reports it all as event lines
// (worker/events/reporter.h). The loop is the same for every workload.
//
// Thread-safety: Run() owns the process's LibTorch state (autocast, the
// global generator); call it from one thread, once. A stall watchdog thread
// may end the process from inside Run() (run_stop "aborted", exit 1), and
// so may the lease watchdog (common/worker_lease.h; no run_stop, exit 3).
#ifndef HPCAI500_WORKER_TRAIN_TRAINER_H_
#define HPCAI500_WORKER_TRAIN_TRAINER_H_

#include <torch/torch.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "common/worker_lease.h"
#include "worker/data/dataset.h"
#include "worker/distributed/distributed.h"
#include "worker/events/event_log.h"
#include "worker/events/reporter.h"
#include "worker/flags.h"
#include "worker/metrics/energy.h"
#include "worker/metrics/timing.h"
#include "worker/train/cuda_graph_step.h"
#include "worker/train/optimizer.h"
#include "worker/train/precision.h"
#include "worker/train/step_hooks.h"
#include "worker/train/sync_free_step.h"
#include "worker/train/task.h"

namespace hpcai500::worker {

// The CUDA device index of a rank with `local_rank` that sees
// `visible_devices` GPUs: 0 when it sees exactly one (the agent gives each
// rank its own through CUDA_VISIBLE_DEVICES), else its local rank's (mpirun
// and srun launches, a node without per-rank CUDA_VISIBLE_DEVICES). Throws
// std::invalid_argument when it sees none, or fewer than its local rank
// needs.
int CudaDeviceFor(int local_rank, int64_t visible_devices);

// The device of this rank: the CPU, or its own GPU (CudaDeviceFor). The
// Trainer makes it the current CUDA device before anything else.
torch::Device DeviceOf(const WorkerOptions& options);

class Trainer {
 public:
  // Borrows `options`, `log`, `lease` (null: none) and `hooks` (null: none,
  // worker/train/step_hooks.h) for the trainer's lifetime. No checkpoint is
  // written once `lease` ran out.
  Trainer(const WorkerOptions& options, EventLog* log,
          LeaseWatchdog* lease = nullptr, StepHooks* hooks = nullptr);
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  // Trains the run to the end of its epoch budget, ending with run_stop
  // "success". Throws (LibTorch's or the readers' exceptions) on failure;
  // the caller ends the run.
  void Run();

 private:
  // Everything from init_start to init_stop; returns the first epoch to
  // train (1, or the one after a resumed checkpoint).
  int Initialize();
  // The events that describe the run before its data is open.
  void ReportRunSetup(int64_t global_batch);
  // Data, task, process group, optimizer, reducer: the run's machinery.
  void BuildTraining(int64_t global_batch);
  // Energy counter and stall watchdog, started with the timed run.
  void StartRunClocks();
  // One epoch of training, its evaluation and its checkpoint.
  void RunEpoch(int epoch);
  EpochStats TrainEpoch(int epoch);
  // One optimizer step of `epoch` (1-based) through the sync-free step (on
  // --cuda-graph, a full step replays the captured graph), adding to
  // `stats`; the loss and skipped steps are summed on the device and read
  // once at the epoch's end.
  void TrainStep(int epoch, int64_t step, EpochClock& clock, EpochStats& stats);
  // Adds a step's `local` samples (> 0) and its forward FLOPs to `stats`;
  // the first also gives the reporter the per-sample figure.
  void CountStep(const FlopCount& forward, int64_t local, EpochStats& stats);
  // `batch` (on the device) as the task trains on it: ImagesOn's input.
  Batch ToDevice(const Batch& batch) const;
  EvalResult Evaluate();
  std::string Fingerprint() const;
  int Resume();
  void RestorePowerSgd(const std::string& dir, int epoch);
  void SaveCheckpointAfter(int epoch);
  bool SavePowerSgdParts(int epoch, bool fenced);
  void WriteManifest(int epoch);

  // Constant after construction.
  const WorkerOptions& o_;
  const torch::Device device_;
  RunReporter reporter_;
  EventLog* const log_;
  LeaseWatchdog* const lease_;
  StepHooks* const hooks_;

  // Built by Initialize().
  std::unique_ptr<Dataset> data_;
  int64_t steps_per_epoch_ = 0;
  std::unique_ptr<Task> task_;
  std::unique_ptr<Collectives> collectives_;
  std::unique_ptr<LearningRateSchedule> schedule_;
  std::unique_ptr<torch::optim::SGD> optimizer_;
  std::unique_ptr<GradientReducer> reducer_;
  LossScaler scaler_{/*enabled=*/false};
  // The steps of every epoch in which every rank's batch is full
  // (FullBatchSteps), and the step made at the first epoch (after a resume
  // loaded the state); graph_step_ only with --cuda-graph.
  int64_t full_steps_ = 0;
  std::unique_ptr<SyncFreeStep> sync_free_;
  std::unique_ptr<CudaGraphStep> graph_step_;
  // Started by StartRunClocks().
  std::unique_ptr<EpochEnergy> energy_;
  std::unique_ptr<StallWatchdog> watchdog_;
};

}  // namespace hpcai500::worker

#endif  // HPCAI500_WORKER_TRAIN_TRAINER_H_
