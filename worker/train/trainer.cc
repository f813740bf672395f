#include "worker/train/trainer.h"

#include <ATen/Context.h>
#include <c10/cuda/CUDAFunctions.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/event_keys.h"
#include "worker/data/device_input.h"
#include "worker/data/open_dataset.h"
#include "worker/data/sharding.h"
#include "worker/events/mllog_keys.h"
#include "worker/metrics/flops.h"
#include "worker/models/model_zoo.h"
#include "worker/train/checkpoint.h"

namespace hpcai500::worker {

namespace {

// The hooks of a trainer given none: they add nothing.
StepHooks& NoStepHooks() {
  static StepHooks none;
  return none;
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

}  // namespace

int CudaDeviceFor(int local_rank, int64_t visible_devices) {
  if (visible_devices < 1) {
    throw std::invalid_argument(
        "--device cuda: no CUDA device is visible to this rank (driver, "
        "CUDA_VISIBLE_DEVICES?)");
  }
  if (visible_devices == 1) return 0;
  if (local_rank < 0 || local_rank >= visible_devices) {
    throw std::invalid_argument(
        "--device cuda: local rank " + std::to_string(local_rank) + " but " +
        std::to_string(visible_devices) +
        " CUDA devices are visible: more ranks on this node than GPUs");
  }
  return local_rank;
}

torch::Device DeviceOf(const WorkerOptions& options) {
  if (*options.args.device != Device::kCuda) return torch::Device(torch::kCPU);
  return torch::Device(torch::kCUDA,
                       static_cast<c10::DeviceIndex>(CudaDeviceFor(
                           options.local_rank,
                           static_cast<int64_t>(torch::cuda::device_count()))));
}

Trainer::Trainer(const WorkerOptions& options, EventLog* log,
                 LeaseWatchdog* lease, StepHooks* hooks)
    : o_(options),
      device_(DeviceOf(options)),
      reporter_(log),
      log_(log),
      lease_(lease),
      hooks_(hooks != nullptr ? hooks : &NoStepHooks()) {
  // Before anything touches CUDA: the rank's device is the current one, so
  // that its context, streams, graph capture and NCCL communicator are all
  // on its own GPU, never on GPU 0 (a rank that sees every GPU of the node).
  if (device_.is_cuda()) c10::cuda::set_device(device_.index());
  // Rank 0's lines go into each checkpoint's manifest (WriteManifest).
  if (o_.rank == 0 && o_.args.checkpoint_dir && o_.args.run_id &&
      o_.args.attempt) {
    log_->KeepLines();
  }
}

Trainer::~Trainer() = default;

void Trainer::Run() {
  const int first_epoch = Initialize();
  StartRunClocks();
  for (int epoch = first_epoch; epoch <= o_.config.epochs; ++epoch) {
    RunEpoch(epoch);
  }
  reporter_.Point(event_keys::kParamChecksum,
                  JsonString(ParameterChecksum(task_->module())));
  reporter_.RunSuccess();
}

int Trainer::Initialize() {
  reporter_.Point(event_keys::kInitStart, kJsonNull, EventType::kIntervalStart);
  const int64_t global_batch =
      static_cast<int64_t>(o_.config.batch_size) * o_.world_size;
  ReportRunSetup(global_batch);
  BuildTraining(global_batch);
  const int first_epoch = Resume() + 1;
  reporter_.Point(event_keys::kInitStop, kJsonNull, EventType::kIntervalEnd);
  return first_epoch;
}

void Trainer::ReportRunSetup(int64_t global_batch) {
  const ConfigInfo& c = o_.config;
  EmitMlperfSubmission(*log_, o_);
  const ModelSpec* model = FindModel(c.model);
  const bool mlperf = o_.args.mllog_submission && model != nullptr &&
                      !model->mlperf_benchmark.empty();
  reporter_.Point(event_keys::kSubmissionBenchmark,
                  JsonString(mlperf ? model->mlperf_benchmark
                                    : std::string_view(c.workload)));
  const bool synthetic = UsesSyntheticData(c);
  reporter_.Point(
      event_keys::kConfig, JsonString(c.name), EventType::kPointInTime,
      {{"model", JsonString(c.model)},
       {"dataset", JsonString(synthetic ? "synthetic" : c.dataset)}});
  if (synthetic) {
    reporter_.Point(event_keys::kUnranked,
                    JsonString("synthetic data: for throughput only"));
  }
  reporter_.Point(event_keys::kSeed,
                  JsonInt(static_cast<int64_t>(*o_.args.seed)));
  reporter_.Point(event_keys::kGlobalBatchSize, JsonInt(global_batch));
}

void Trainer::BuildTraining(int64_t global_batch) {
  const ConfigInfo& c = o_.config;
  // Before anything is made on the device (the synthetic batch is): the
  // captured run's one stream, which does not wait for the default one.
  if (*o_.args.cuda_graph) UseCaptureStream(device_);
  data_ = OpenDataset(o_, device_);
  steps_per_epoch_ =
      StepsPerEpoch(data_->train_size(), o_.world_size, c.batch_size,
                    o_.args.steps_per_epoch.value_or(0));
  reporter_.Point(event_keys::kTrainSamples,
                  JsonInt(SamplesPerEpoch(data_->train_size(), o_.world_size,
                                          c.batch_size, steps_per_epoch_)));
  reporter_.Point(event_keys::kEvalSamples, JsonInt(data_->eval_size()));

  if (*o_.args.deterministic) {
    EnableDeterminism(static_cast<int>(*o_.args.threads));
  } else if (device_.is_cuda()) {
    // The shapes of a run are fixed: cuDNN's autotuner picks each
    // convolution's fastest algorithm once and keeps it.
    at::globalContext().setBenchmarkCuDNN(true);
  }
  full_steps_ = FullBatchSteps(data_->train_size(), o_.world_size, c.batch_size,
                               steps_per_epoch_);
  torch::manual_seed(*o_.args.seed);
  task_ = MakeTask(o_, *data_, device_);
  collectives_ = std::make_unique<Collectives>(o_, device_);
  BroadcastModuleState(*collectives_, task_->module());
  schedule_ =
      std::make_unique<LearningRateSchedule>(c, global_batch, steps_per_epoch_);
  optimizer_ =
      MakeOptimizer(c, task_->module().parameters(), schedule_->base_lr());
  EmitMlperfHyperparameters(
      *log_, o_,
      MlperfRunFacts{global_batch, schedule_->base_lr(), steps_per_epoch_});
  ReducerOptions reducer_options{
      *o_.args.compression, static_cast<int>(*o_.args.powersgd_rank),
      *o_.args.bucket_mb, *o_.args.powersgd_warmup_steps};
  reducer_options.capturable = *o_.args.cuda_graph;
  reducer_ = std::make_unique<GradientReducer>(
      collectives_.get(), task_->module().parameters(), reducer_options);
  scaler_ = LossScaler::ForPrecision(*o_.args.precision);
}

void Trainer::StartRunClocks() {
  std::string energy_note;
  energy_ = std::make_unique<EpochEnergy>(
      OpenEnergyReader(device_.is_cuda(), o_.local_rank, &energy_note));
  if (!energy_note.empty()) {
    std::fprintf(stderr, "hpcai500-worker rank %d: %s\n", o_.rank,
                 energy_note.c_str());
  }
  JsonMembers run_start;
  if (const std::string on = EnabledFastPaths(o_.args); !on.empty()) {
    run_start.push_back({event_keys::kMetaFastPaths, JsonString(on)});
  }
  reporter_.Point(event_keys::kRunStart, kJsonNull, EventType::kIntervalStart,
                  run_start);
  // A rank that stops making progress (a peer stopped or gone mid
  // collective) ends with run_stop "aborted" and exit 1 instead of hanging.
  watchdog_ = std::make_unique<StallWatchdog>(
      std::chrono::seconds(*o_.args.watchdog_seconds),
      [log = log_, rank = o_.rank](const std::string& reason) {
        ReportAbort(log, rank, reason);
        std::fflush(nullptr);
        std::_Exit(1);
      });
}

void Trainer::RunEpoch(int epoch) {
  reporter_.EpochStart(epoch);
  reporter_.EpochStop(epoch, TrainEpoch(epoch));
  reporter_.EvalStart(epoch);
  const double eval_started = MonotonicSeconds();
  const EvalResult eval = Evaluate();
  reporter_.EvalStop(epoch, MonotonicSeconds() - eval_started, eval);
  SaveCheckpointAfter(epoch);
}

EpochStats Trainer::TrainEpoch(int epoch) {
  task_->module().train();
  data_->StartEpoch(epoch, steps_per_epoch_);
  if (sync_free_ == nullptr) {
    // Made at the first epoch trained: a resume has loaded the momentum and
    // the loss scale it takes over.
    sync_free_ = std::make_unique<SyncFreeStep>(
        StepParts{task_.get(), optimizer_.get(), &scaler_, reducer_.get(),
                  *o_.args.precision, device_, watchdog_.get()});
    if (*o_.args.cuda_graph) {
      graph_step_ = std::make_unique<CudaGraphStep>(
          sync_free_.get(), reducer_.get(), device_,
          StaticBatchShape{o_.config.batch_size, data_->sample_shape(),
                           task_->channels_last()});
    }
  }
  const auto start = std::chrono::steady_clock::now();
  EpochStats stats;
  const CommStats comm_before = reducer_->stats();
  EpochClock clock;
  energy_->StartEpoch();
  for (int64_t step = 0; step < steps_per_epoch_; ++step) {
    TrainStep(epoch, step, clock, stats);
  }
  // The epoch's one sync: its loss and skipped steps, the scaler's state.
  watchdog_->SetPhase("epoch totals");
  const SyncFreeTotals totals = sync_free_->TakeTotals();
  stats.skipped_steps = totals.skipped_steps;
  stats.seconds = SecondsSince(start);
  stats.compute_seconds = clock.seconds(Phase::kCompute);
  stats.input_wait_seconds = clock.seconds(Phase::kInputWait);
  stats.energy_joules = energy_->StopEpoch();
  if (stats.energy_joules) stats.energy_source = energy_->source();
  const CommStats comm_after = reducer_->stats();
  stats.comm_bytes = comm_after.bytes - comm_before.bytes;
  stats.comm_wait_seconds = comm_after.wait_seconds - comm_before.wait_seconds;
  stats.mean_loss = stats.samples > 0 ? totals.loss_sum / stats.samples : 0.0;
  stats.loss_scale = scaler_.scale();
  stats.corrupt_samples = data_->corrupt_samples();
  return stats;
}

void Trainer::TrainStep(int epoch, int64_t step, EpochClock& clock,
                        EpochStats& stats) {
  const auto step_start = std::chrono::steady_clock::now();
  sync_free_->SetLearningRate(
      schedule_->At((epoch - 1) * steps_per_epoch_ + step));
  StepTimer wait_for_batch(&clock, Phase::kInputWait);
  std::optional<Batch> next = data_->NextTrain();
  wait_for_batch.Stop();
  const int64_t local = next ? next->size() : 0;
  watchdog_->Beat();
  energy_->Poll(clock.now());
  const StepKind kind = KindOfStep(step, full_steps_, local);
  // Known on every rank without a collective on the full steps.
  const std::optional<int64_t> global =
      kind == StepKind::kFull
          ? std::optional<int64_t>(o_.config.batch_size * o_.world_size)
          : std::nullopt;
  const bool replay = kind == StepKind::kFull && graph_step_ != nullptr;
  if (local == 0 && !replay) {
    sync_free_->StepWithoutSamples(global);
    hooks_->AfterStep(step_start);
    return;
  }
  StepTimer input_wait(&clock, Phase::kInputWait);
  const Batch batch = local > 0 ? ToDevice(*next) : Batch{};
  input_wait.Stop();
  StepTimer compute(&clock, Phase::kCompute);
  hooks_->BeforeForward(device_, *o_.args.precision, epoch, step);
  FlopCount forward;
  if (replay) {
    watchdog_->SetPhase("training step (CUDA graph)");
    forward = graph_step_->Run(batch, local, *global);
  } else {
    forward = sync_free_->Step(batch, local, global);
  }
  if (local > 0) {
    // A masked replay's FLOPs are the whole static batch's: count this
    // rank's samples' share.
    if (replay && local < o_.config.batch_size) {
      const double share = static_cast<double>(local) / o_.config.batch_size;
      forward.flops *= share;
      forward.other_ops = static_cast<int64_t>(forward.other_ops * share);
      forward.other_elements *= share;
    }
    CountStep(forward, local, stats);
  }
  hooks_->AfterStep(step_start);
}

void Trainer::CountStep(const FlopCount& forward, int64_t local,
                        EpochStats& stats) {
  stats.forward_flops += forward.flops;
  stats.other_ops += forward.other_ops;
  // The first batch also gives the per-sample figure the score uses.
  reporter_.ForwardFlopsPerSample(forward.flops / static_cast<double>(local));
  stats.samples += local;
}

Batch Trainer::ToDevice(const Batch& batch) const {
  Batch on_device;
  on_device.images = ImagesOn(batch, device_, task_->channels_last());
  if (batch.labels.defined()) on_device.labels = batch.labels.to(device_);
  for (const DetectionTarget& t : batch.targets) {
    on_device.targets.push_back({t.boxes.to(device_), t.labels.to(device_)});
  }
  return on_device;
}

// The quality of the model on the whole evaluation set, every rank scoring
// its shard. BatchNorm statistics are averaged first so every rank
// evaluates the same model.
EvalResult Trainer::Evaluate() {
  watchdog_->Beat();
  watchdog_->SetPhase("evaluation (buffer all-reduce)");
  AverageFloatBuffers(*collectives_, task_->module());
  watchdog_->SetPhase("evaluation");
  task_->module().eval();
  torch::NoGradGuard no_grad;
  task_->StartEvaluation();
  data_->StartEval();
  while (std::optional<Batch> batch = data_->NextEval()) {
    watchdog_->Beat();
    task_->EvaluateBatch(*batch);
  }
  const EvalResult result = task_->FinishEvaluation(*collectives_, *watchdog_);
  task_->module().train();
  return result;
}

// What a checkpoint must match to continue this run (see checkpoint.h).
std::string Trainer::Fingerprint() const {
  const ConfigInfo& c = o_.config;
  return "workload=" + c.workload + " config=" + c.name + " model=" + c.model +
         " world_size=" + std::to_string(o_.world_size) +
         " batch_size=" + std::to_string(c.batch_size) +
         " steps_per_epoch=" + std::to_string(steps_per_epoch_) +
         " seed=" + std::to_string(*o_.args.seed) +
         " precision=" + std::string(Name(*o_.args.precision));
}

// --resume: every rank loads the checkpoint of the epoch rank 0 finds
// newest in --checkpoint-dir and emits hpcai500_resume (null when there is
// none: a fresh start). Returns the epoch it completed, 0 when fresh. The
// lr schedule needs no state: it is a function of epoch and step.
int Trainer::Resume() {
  if (!*o_.args.resume) return 0;
  const std::string dir = o_.args.checkpoint_dir.value_or("");
  const std::optional<std::string> newest = NewestCheckpoint(dir);
  TrainingState state{&task_->module(), optimizer_.get(), &scaler_, 0,
                      Fingerprint()};
  if (o_.rank == 0 && newest) LoadCheckpoint(*newest, &state);
  torch::Tensor epoch =
      torch::tensor({static_cast<double>(state.epoch)}, torch::kFloat64);
  collectives_->BroadcastFromRank0(epoch);
  const int resumed = static_cast<int>(epoch.item<double>());
  if (resumed == 0) {
    reporter_.Point(
        event_keys::kResume, kJsonNull, EventType::kPointInTime,
        {{event_keys::kMetaReason, JsonString("no checkpoint in " + dir)}});
    return 0;
  }
  const std::string path = CheckpointPath(dir, resumed);
  if (o_.rank != 0) LoadCheckpoint(path, &state);
  if (*o_.args.compression == Compression::kPowerSgd) {
    RestorePowerSgd(dir, resumed);
  }
  reporter_.Point(event_keys::kResume, JsonInt(resumed),
                  EventType::kPointInTime, {{"checkpoint", JsonString(path)}});
  return resumed;
}

// Rank 0 checkpoints the state at the end of `epoch` (after evaluation
// averaged the buffers) when --checkpoint-dir is set; under PowerSGD every
// rank first saves its own part (checkpoint.h).
void Trainer::SaveCheckpointAfter(int epoch) {
  if (!o_.args.checkpoint_dir) return;
  // Past its lease this attempt may be another node's by now: the run's
  // next attempt must not find a checkpoint this one wrote after it began.
  const bool fenced = lease_ != nullptr && lease_->Check();
  watchdog_->SetPhase("checkpoint");
  if (*o_.args.compression == Compression::kPowerSgd &&
      !SavePowerSgdParts(epoch, fenced)) {
    return;
  }
  if (o_.rank != 0 || fenced) return;
  const std::string path = SaveCheckpoint(
      *o_.args.checkpoint_dir, TrainingState{&task_->module(), optimizer_.get(),
                                             &scaler_, epoch, Fingerprint()});
  reporter_.Checkpoint(path, epoch);
  WriteManifest(epoch);
}

// Beside rank 0's checkpoint of `epoch`, its manifest: what lets the next
// attempt resume from it though its event never reached the coordinator.
// Only for a worker an agent started (it names the run and attempt). A
// manifest that cannot be written costs that fallback, not the run.
void Trainer::WriteManifest(int epoch) {
  if (!o_.args.run_id || !o_.args.attempt) return;
  const std::string& dir = *o_.args.checkpoint_dir;
  std::vector<std::string> files = {CheckpointFileName(epoch)};
  if (*o_.args.compression == Compression::kPowerSgd) {
    for (int rank = 0; rank < o_.world_size; ++rank) {
      files.push_back(
          std::filesystem::path(CheckpointPartPath(dir, epoch, rank))
              .filename()
              .string());
    }
  }
  try {
    WriteCheckpointManifest(dir, *o_.args.run_id, *o_.args.attempt, epoch,
                            files, log_->TakeKeptLines());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hpcai500-worker rank %d: no manifest: %s\n", o_.rank,
                 e.what());
  }
}

// Collective: each rank not `fenced` saves its PowerSGD part of `epoch`;
// true once every rank did, so rank 0's main file (written after) never
// names an epoch whose parts are not all on disk.
bool Trainer::SavePowerSgdParts(int epoch, bool fenced) {
  if (!fenced) {
    SavePowerSgdPart(*o_.args.checkpoint_dir, epoch, o_.rank,
                     reducer_->powersgd_state());
  }
  torch::Tensor saved = torch::tensor({fenced ? 0.0 : 1.0}, torch::kFloat64);
  collectives_->AllReduceSum(saved);
  return saved.item<double>() == o_.world_size;
}

// Every rank continues its own PowerSGD state from the checkpoint of
// `epoch` in `dir`; a compressed run refuses a checkpoint without it.
void Trainer::RestorePowerSgd(const std::string& dir, int epoch) {
  const std::string part = CheckpointPartPath(dir, epoch, o_.rank);
  try {
    reducer_->RestorePowerSgd(LoadPowerSgdPart(part));
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error("checkpoint part " + part + ": " + e.what());
  }
}

}  // namespace hpcai500::worker
