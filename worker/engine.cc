#include "worker/engine.h"

#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <optional>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

#include "worker/checkpoint.h"
#include "worker/data.h"
#include "worker/distributed.h"
#include "worker/energy.h"
#include "worker/flops.h"
#include "worker/models.h"
#include "worker/precision.h"
#include "worker/timing.h"

namespace hpcai500::worker {

namespace {

constexpr int64_t kEvalBatch = 500;
constexpr size_t kMaxReasonBytes = 2000;

// Copies `tensors` into one flat float CPU tensor with `extra` trailing
// slots, so a whole set moves in one collective.
torch::Tensor Flatten(const std::vector<torch::Tensor>& tensors,
                      int64_t extra) {
  int64_t total = extra;
  for (const auto& t : tensors) total += t.numel();
  torch::Tensor flat = torch::zeros({total}, torch::kFloat32);
  int64_t offset = 0;
  for (const auto& t : tensors) {
    if (t.defined()) {
      flat.slice(0, offset, offset + t.numel())
          .copy_(t.detach().reshape(-1).to(torch::kCPU, torch::kFloat32));
    }
    offset += t.numel();
  }
  return flat;
}

// Writes the slices of `flat` back into `tensors`, in place.
void Unflatten(const torch::Tensor& flat, std::vector<torch::Tensor>& tensors) {
  torch::NoGradGuard no_grad;
  int64_t offset = 0;
  for (auto& t : tensors) {
    t.copy_(flat.slice(0, offset, offset + t.numel()).view_as(t));
    offset += t.numel();
  }
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

// One rank of an image-classification run on Fashion-MNIST.
class Trainer {
 public:
  Trainer(const WorkerOptions& options, EventLog* log)
      : o_(options),
        log_(log),
        device_(options.device == "cuda"
                    ? torch::Device(torch::kCUDA, options.local_rank)
                    : torch::Device(torch::kCPU)) {}

  void Run() {
    Point("init_start", kJsonNull, EventType::kIntervalStart);
    const ConfigInfo& c = o_.config;
    const int64_t global_batch =
        static_cast<int64_t>(c.batch_size) * o_.world_size;
    Point("submission_benchmark", JsonString(c.workload));
    Point("hpcai500_config", JsonString(c.name), EventType::kPointInTime,
          {{"model", JsonString(c.model)}, {"dataset", JsonString(c.dataset)}});
    Point("seed", JsonInt(static_cast<int64_t>(o_.seed)));
    Point("global_batch_size", JsonInt(global_batch));

    data_ = LoadFashionMnist(c.data_dir, c.train_samples, c.eval_samples);
    steps_per_epoch_ = StepsPerEpoch();
    Point("train_samples", JsonInt(SamplesPerEpochAllRanks()));
    Point("eval_samples", JsonInt(data_.test.size()));

    if (o_.deterministic) EnableDeterminism(o_.threads);
    torch::manual_seed(o_.seed);
    model_ = ResNetSmall(/*num_classes=*/10);
    model_->to(device_);
    channels_last_ = WantsChannelsLast(o_.precision, /*asked=*/false);
    if (channels_last_) ToChannelsLast(*model_);
    collectives_ = std::make_unique<Collectives>(o_);
    BroadcastModelState();
    // SGD with momentum and weight decay; lr scales linearly with the global
    // batch (config lr is per 256 images), warms up linearly over the
    // config's warmup epochs, then follows a cosine to zero at the end of
    // the budget, stepped every batch.
    base_lr_ = c.lr * static_cast<double>(global_batch) / 256.0;
    optimizer_ = std::make_unique<torch::optim::SGD>(
        model_->parameters(), torch::optim::SGDOptions(base_lr_)
                                  .momentum(c.momentum)
                                  .weight_decay(c.weight_decay));
    reducer_ = std::make_unique<GradientReducer>(
        collectives_.get(), model_->parameters(),
        ReducerOptions{o_.compression, o_.powersgd_rank, o_.bucket_mb});
    scaler_ = LossScaler::ForPrecision(o_.precision);
    const int first_epoch = Resume() + 1;
    Point("init_stop", kJsonNull, EventType::kIntervalEnd);

    std::string energy_note;
    energy_ = std::make_unique<EpochEnergy>(
        OpenEnergyReader(device_.is_cuda(), o_.local_rank, &energy_note));
    if (!energy_note.empty()) {
      std::fprintf(stderr, "hpcai500-worker rank %d: %s\n", o_.rank,
                   energy_note.c_str());
    }
    Point("run_start", kJsonNull, EventType::kIntervalStart);
    // A rank that stops making progress (a peer stopped or gone mid
    // collective) ends with run_stop "aborted" and exit 1 instead of hanging.
    watchdog_ = std::make_unique<StallWatchdog>(
        std::chrono::seconds(o_.watchdog_seconds),
        [log = log_, rank = o_.rank](const std::string& reason) {
          std::fprintf(stderr, "hpcai500-worker rank %d: aborted: %s\n", rank,
                       reason.c_str());
          try {
            log->Emit(EventType::kIntervalEnd, "run_stop", kJsonNull,
                      {{"status", JsonString("aborted")},
                       {"reason", JsonString(reason)}});
          } catch (const std::exception& e) {
            std::fprintf(stderr, "hpcai500-worker: cannot write run_stop: %s\n",
                         e.what());
          }
          std::fflush(nullptr);
          std::_Exit(1);
        });
    for (int epoch = first_epoch; epoch <= c.epochs; ++epoch) {
      const JsonMembers epoch_meta = {{"epoch_num", JsonInt(epoch)}};
      Point("epoch_start", kJsonNull, EventType::kIntervalStart, epoch_meta);
      const EpochStats stats = TrainEpoch(epoch);
      Point("epoch_stop", kJsonNull, EventType::kIntervalEnd, epoch_meta);
      JsonMembers measured = {
          {"samples", JsonInt(stats.samples)},
          {"seconds", JsonDouble(stats.seconds)},
          {"throughput",
           JsonDouble(stats.seconds > 0 ? stats.samples / stats.seconds : 0.0)},
          {"train_loss", JsonDouble(stats.mean_loss)},
          {"comm_bytes", JsonInt(stats.comm.bytes)},
          {"comm_wait_seconds", JsonDouble(stats.comm.wait_seconds)},
          {"forward_flops", JsonDouble(stats.forward.flops)},
          {"other_ops", JsonInt(stats.forward.other_ops)},
          {"compute_seconds", JsonDouble(stats.compute_seconds)},
          {"input_wait_seconds", JsonDouble(stats.input_wait_seconds)},
          {"skipped_steps", JsonInt(stats.skipped_steps)},
          {"loss_scale", JsonDouble(scaler_.scale())}};
      if (stats.energy_joules) {
        measured.emplace_back("energy_joules",
                              JsonDouble(*stats.energy_joules));
        measured.emplace_back("energy_source", JsonString(energy_->source()));
      }
      Point("hpcai500_epoch_stats", JsonObject(measured),
            EventType::kPointInTime, epoch_meta);
      Point("eval_start", kJsonNull, EventType::kIntervalStart, epoch_meta);
      const double eval_started = MonotonicSeconds();
      const double accuracy = Evaluate();
      JsonMembers eval_meta = epoch_meta;
      eval_meta.emplace_back("eval_seconds",
                             JsonDouble(MonotonicSeconds() - eval_started));
      Point("eval_stop", kJsonNull, EventType::kIntervalEnd, eval_meta);
      Point("eval_accuracy", JsonDouble(accuracy), EventType::kPointInTime,
            epoch_meta);
      SaveCheckpointAfter(epoch);
    }
    Point("hpcai500_param_checksum", JsonString(ParameterChecksum(*model_)));
    Point("run_stop", kJsonNull, EventType::kIntervalEnd,
          {{"status", JsonString("success")}});
  }

 private:
  struct EpochStats {
    int64_t samples = 0;
    double seconds = 0;
    double mean_loss = 0;
    FlopCount forward;              // this rank's forward passes, all batches
    double compute_seconds = 0;     // forward, backward, optimizer
    double input_wait_seconds = 0;  // indexing, normalising, copying
    std::optional<double> energy_joules;  // absent without a counter
    CommStats comm;                       // gradient all-reduces of the epoch
    int64_t skipped_steps = 0;  // non-finite gradients (fp16 loss scaling)
  };

  // Counts the forward pass of every training batch; the first one also
  // gives the per-sample figure the score uses.
  torch::Tensor CountedForward(const torch::Tensor& x, EpochStats& stats) {
    FlopCounter counter;
    torch::Tensor logits = model_->forward(x);
    const FlopCount& batch = counter.Stop();
    stats.forward += batch;
    if (!flops_per_sample_emitted_) {
      flops_per_sample_emitted_ = true;
      Point("hpcai500_forward_flops_per_sample",
            JsonDouble(batch.flops / static_cast<double>(x.size(0))),
            EventType::kPointInTime,
            {{"convention", JsonString("convolutions and matrix products; "
                                       "multiply-add = 2")}});
    }
    return logits;
  }

  void Point(std::string_view key, std::string_view value,
             EventType type = EventType::kPointInTime,
             const JsonMembers& metadata = {}) {
    log_->Emit(type, key, value, metadata);
  }

  // Rank r's shard holds every world_size-th sample; all ranks take the
  // same number of steps (the largest shard's), so collectives pair up.
  int64_t StepsPerEpoch() const {
    const int64_t n = data_.train.size();
    const int64_t largest_shard = (n + o_.world_size - 1) / o_.world_size;
    int64_t steps =
        (largest_shard + o_.config.batch_size - 1) / o_.config.batch_size;
    if (o_.steps_per_epoch > 0) steps = std::min(steps, o_.steps_per_epoch);
    return steps;
  }

  int64_t ShardSize(int rank) const {
    const int64_t n = data_.train.size();
    return n / o_.world_size + (rank < n % o_.world_size ? 1 : 0);
  }

  int64_t SamplesPerEpochAllRanks() const {
    int64_t total = 0;
    for (int r = 0; r < o_.world_size; ++r) {
      total += std::min(ShardSize(r), steps_per_epoch_ * o_.config.batch_size);
    }
    return total;
  }

  // This rank's sample indices for `epoch`: a permutation drawn from
  // seed + epoch (identical on every rank), every world_size-th entry.
  std::vector<int64_t> Shard(int epoch) const {
    std::vector<int64_t> order(static_cast<size_t>(data_.train.size()));
    std::iota(order.begin(), order.end(), 0);
    std::mt19937_64 rng(o_.seed + static_cast<uint64_t>(epoch));
    std::shuffle(order.begin(), order.end(), rng);
    std::vector<int64_t> shard;
    for (size_t i = o_.rank; i < order.size(); i += o_.world_size) {
      shard.push_back(order[i]);
    }
    return shard;
  }

  double LearningRate(int64_t step) const {
    const int64_t total = steps_per_epoch_ * o_.config.epochs;
    const int64_t warmup = steps_per_epoch_ * o_.config.warmup_epochs;
    if (step < warmup) {
      return base_lr_ * static_cast<double>(step + 1) / warmup;
    }
    const double progress = static_cast<double>(step - warmup) /
                            std::max<int64_t>(1, total - warmup);
    return base_lr_ * 0.5 * (1.0 + std::cos(M_PI * progress));
  }

  void SetLearningRate(double lr) {
    for (auto& group : optimizer_->param_groups()) {
      static_cast<torch::optim::SGDOptions&>(group.options()).lr(lr);
    }
  }

  void BroadcastModelState() {
    std::vector<torch::Tensor> state = model_->parameters();
    for (auto& b : model_->buffers()) state.push_back(b);
    torch::Tensor flat = Flatten(state, /*extra=*/0);
    collectives_->BroadcastFromRank0(flat);
    Unflatten(flat, state);
  }

  // Averages BatchNorm running statistics so every rank evaluates the same
  // model.
  void AverageFloatBuffers() {
    std::vector<torch::Tensor> buffers;
    for (auto& b : model_->buffers()) {
      if (b.is_floating_point()) buffers.push_back(b);
    }
    torch::Tensor flat = Flatten(buffers, /*extra=*/0);
    collectives_->AllReduceSum(flat);
    flat.div_(collectives_->world_size());
    Unflatten(flat, buffers);
  }

  EpochStats TrainEpoch(int epoch) {
    model_->train();
    const std::vector<int64_t> shard = Shard(epoch);
    const int64_t batch = o_.config.batch_size;
    const auto start = std::chrono::steady_clock::now();
    EpochStats stats;
    const CommStats comm_before = reducer_->stats();
    EpochClock clock;
    energy_->StartEpoch();
    double loss_sum = 0;
    auto cross_entropy =
        torch::nn::functional::CrossEntropyFuncOptions().label_smoothing(
            o_.config.label_smoothing);
    for (int64_t step = 0; step < steps_per_epoch_; ++step) {
      SetLearningRate(LearningRate((epoch - 1) * steps_per_epoch_ + step));
      optimizer_->zero_grad();
      const int64_t begin = std::min<int64_t>(step * batch, shard.size());
      const int64_t end = std::min<int64_t>(begin + batch, shard.size());
      const int64_t local = end - begin;
      watchdog_->Beat();
      watchdog_->SetPhase("gradient all-reduce (sample count)");
      reducer_->BeginStep(local);
      watchdog_->SetPhase("forward and backward");
      energy_->Poll(clock.now());
      if (local > 0) {
        StepTimer input_wait(&clock, Phase::kInputWait);
        torch::Tensor index = torch::from_blob(
            const_cast<int64_t*>(shard.data() + begin), {local}, torch::kInt64);
        torch::Tensor x =
            NormalizeImages(data_.train.images.index_select(0, index))
                .to(device_);
        if (channels_last_) x = ChannelsLastInput(x);
        torch::Tensor y = data_.train.labels.index_select(0, index).to(device_);
        input_wait.Stop();
        StepTimer compute(&clock, Phase::kCompute);
        torch::Tensor loss;
        {
          AutocastScope autocast(o_.precision, device_);
          loss = torch::nn::functional::cross_entropy(CountedForward(x, stats),
                                                      y, cross_entropy);
        }
        scaler_.Scale(loss).backward();
        loss_sum += loss.item<double>() * local;
        stats.samples += local;
      }
      watchdog_->SetPhase("gradient all-reduce");
      reducer_->FinishStep();
      watchdog_->SetPhase("optimizer step");
      StepTimer compute(&clock, Phase::kCompute);
      if (!scaler_.Step(*optimizer_, model_->parameters())) {
        ++stats.skipped_steps;
      }
    }
    stats.seconds = SecondsSince(start);
    stats.compute_seconds = clock.seconds(Phase::kCompute);
    stats.input_wait_seconds = clock.seconds(Phase::kInputWait);
    stats.energy_joules = energy_->StopEpoch();
    const CommStats comm_after = reducer_->stats();
    stats.comm.bytes = comm_after.bytes - comm_before.bytes;
    stats.comm.wait_seconds =
        comm_after.wait_seconds - comm_before.wait_seconds;
    stats.mean_loss = stats.samples > 0 ? loss_sum / stats.samples : 0.0;
    return stats;
  }

  // What a checkpoint must match to continue this run (see checkpoint.h).
  std::string Fingerprint() const {
    const ConfigInfo& c = o_.config;
    return "workload=" + c.workload + " config=" + c.name +
           " model=" + c.model +
           " world_size=" + std::to_string(o_.world_size) +
           " batch_size=" + std::to_string(c.batch_size) +
           " steps_per_epoch=" + std::to_string(steps_per_epoch_) +
           " seed=" + std::to_string(o_.seed) + " precision=" + o_.precision;
  }

  // --resume: every rank loads the checkpoint of the epoch rank 0 finds
  // newest in --checkpoint-dir and emits hpcai500_resume (null when there is
  // none: a fresh start). Returns the epoch it completed, 0 when fresh. The
  // lr schedule needs no state: it is a function of epoch and step.
  int Resume() {
    if (!o_.resume) return 0;
    const std::optional<std::string> newest =
        NewestCheckpoint(o_.checkpoint_dir);
    TrainingState state{model_.ptr().get(), optimizer_.get(), &scaler_, 0,
                        Fingerprint()};
    if (o_.rank == 0 && newest) LoadCheckpoint(*newest, &state);
    torch::Tensor epoch =
        torch::tensor({static_cast<double>(state.epoch)}, torch::kFloat64);
    collectives_->BroadcastFromRank0(epoch);
    const int resumed = static_cast<int>(epoch.item<double>());
    if (resumed == 0) {
      Point("hpcai500_resume", kJsonNull, EventType::kPointInTime,
            {{"reason", JsonString("no checkpoint in " + o_.checkpoint_dir)}});
      return 0;
    }
    const std::string path = CheckpointPath(o_.checkpoint_dir, resumed);
    if (o_.rank != 0) LoadCheckpoint(path, &state);
    Point("hpcai500_resume", JsonInt(resumed), EventType::kPointInTime,
          {{"checkpoint", JsonString(path)}});
    return resumed;
  }

  // Rank 0 checkpoints the state at the end of `epoch` (after evaluation
  // averaged the buffers) when --checkpoint-dir is set.
  void SaveCheckpointAfter(int epoch) {
    if (o_.checkpoint_dir.empty() || o_.rank != 0) return;
    watchdog_->SetPhase("checkpoint");
    const std::string path = SaveCheckpoint(
        o_.checkpoint_dir, TrainingState{model_.ptr().get(), optimizer_.get(),
                                         &scaler_, epoch, Fingerprint()});
    Point("hpcai500_checkpoint", JsonString(path), EventType::kPointInTime,
          {{"epoch_num", JsonInt(epoch)}});
  }

  // Top-1 accuracy over the whole evaluation set: each rank scores every
  // world_size-th image and the counts are summed across ranks.
  double Evaluate() {
    watchdog_->Beat();
    watchdog_->SetPhase("evaluation (buffer all-reduce)");
    AverageFloatBuffers();
    watchdog_->SetPhase("evaluation");
    model_->eval();
    torch::NoGradGuard no_grad;
    const int64_t n = data_.test.size();
    torch::Tensor mine = torch::arange(o_.rank, n, o_.world_size,
                                       torch::TensorOptions(torch::kInt64));
    int64_t correct = 0;
    for (int64_t begin = 0; begin < mine.numel(); begin += kEvalBatch) {
      watchdog_->Beat();
      torch::Tensor index =
          mine.slice(0, begin, std::min(begin + kEvalBatch, mine.numel()));
      torch::Tensor x =
          NormalizeImages(data_.test.images.index_select(0, index)).to(device_);
      if (channels_last_) x = ChannelsLastInput(x);
      torch::Tensor y = data_.test.labels.index_select(0, index).to(device_);
      torch::Tensor logits;
      {
        AutocastScope autocast(o_.precision, device_);
        logits = model_->forward(x);
      }
      correct += logits.argmax(1).eq(y).sum().item<int64_t>();
    }
    torch::Tensor counts = torch::tensor(
        {static_cast<double>(correct), static_cast<double>(mine.numel())},
        torch::kFloat64);
    watchdog_->SetPhase("evaluation (count all-reduce)");
    collectives_->AllReduceSum(counts);
    model_->train();
    const double total = counts[1].item<double>();
    return total > 0 ? counts[0].item<double>() / total : 0.0;
  }

  // Constant after construction.
  const WorkerOptions& o_;
  EventLog* const log_;
  const torch::Device device_;

  FashionMnist data_;
  int64_t steps_per_epoch_ = 0;
  ResNetSmall model_{nullptr};
  std::unique_ptr<Collectives> collectives_;
  std::unique_ptr<GradientReducer> reducer_;
  std::unique_ptr<StallWatchdog> watchdog_;
  std::unique_ptr<torch::optim::SGD> optimizer_;
  double base_lr_ = 0;
  LossScaler scaler_{/*enabled=*/false};
  bool channels_last_ = false;  // model and inputs in NHWC
  bool flops_per_sample_emitted_ = false;
  std::unique_ptr<EpochEnergy> energy_;
};

std::string Truncate(std::string s) {
  if (s.size() > kMaxReasonBytes) {
    s.resize(kMaxReasonBytes);
    s += "...";
  }
  return s;
}

}  // namespace

std::string CheckRunnable(const WorkerOptions& options) {
  const ConfigInfo& c = options.config;
  if (std::string problem = CheckCommunication(options); !problem.empty()) {
    return problem;
  }
  if (c.model != "resnet_small") {
    return "config " + c.name + ": model '" + c.model +
           "' is not built by this worker";
  }
  if (c.dataset != "fashion_mnist") {
    return "config " + c.name + ": dataset '" + c.dataset +
           "' is not read by this worker";
  }
  if (!c.real_data) {
    return "config " + c.name + ": synthetic data is not implemented";
  }
  if (options.device == "cuda") {
    if (!torch::cuda::is_available()) {
      return "--device cuda: no CUDA device is available to this LibTorch";
    }
    if (options.local_rank >= static_cast<int>(torch::cuda::device_count())) {
      return "--device cuda: LOCAL_RANK " + std::to_string(options.local_rank) +
             " has no GPU (" + std::to_string(torch::cuda::device_count()) +
             " visible)";
    }
  }
  if (options.precision == "fp16" && options.device != "cuda") {
    return "--precision fp16 runs only on --device cuda";
  }
  return "";
}

int RunWorker(const WorkerOptions& options, EventLog* log) {
  std::string reason;
  try {
    torch::set_num_threads(options.threads);
    Trainer(options, log).Run();
    return 0;
  } catch (const c10::Error& e) {
    reason = e.what_without_backtrace();
  } catch (const std::exception& e) {
    reason = e.what();
  } catch (...) {
    reason = "unknown exception";
  }
  reason = Truncate(reason);
  std::fprintf(stderr, "hpcai500-worker rank %d: aborted: %s\n", options.rank,
               reason.c_str());
  try {
    log->Emit(
        EventType::kIntervalEnd, "run_stop", kJsonNull,
        {{"status", JsonString("aborted")}, {"reason", JsonString(reason)}});
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hpcai500-worker rank %d: cannot write run_stop: %s\n",
                 options.rank, e.what());
  }
  return 1;
}

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
      EventLog::Open(options.events_file, options.rank, stdout,
                     EventLog::SystemClockMs, &error);
  if (!log) {
    std::fprintf(stderr, "hpcai500-worker: %s\n", error.c_str());
    return 2;
  }
  return RunWorker(options, log.get());
}

}  // namespace hpcai500::worker
