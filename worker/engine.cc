#include "worker/engine.h"

#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <random>
#include <stdexcept>
#include <thread>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <vector>

#include "worker/data.h"
#include "worker/models.h"

namespace hpcai500::worker {

namespace {

// Rendezvous and every collective give up after this long, so a rank whose
// peer died ends with run_stop "aborted" instead of hanging.
constexpr std::chrono::milliseconds kCollectiveTimeout{std::chrono::minutes(3)};
constexpr int64_t kEvalBatch = 500;
constexpr size_t kMaxReasonBytes = 2000;

// The data-parallel group of this run; a world of one has no process group
// and every collective is the identity.
class Collectives {
 public:
  explicit Collectives(const WorkerOptions& o)
      : rank_(o.rank), world_size_(o.world_size) {
    if (world_size_ == 1) return;
    c10d::TCPStoreOptions store_options;
    store_options.port = static_cast<uint16_t>(o.master_port);
    store_options.isServer = o.rank == 0;
    store_options.numWorkers = static_cast<size_t>(o.world_size);
    store_options.waitWorkers = true;
    store_options.timeout = kCollectiveTimeout;
    auto tcp_store =
        c10::make_intrusive<c10d::TCPStore>(o.master_addr, store_options);
    auto store = c10::make_intrusive<c10d::PrefixStore>("hpcai500", tcp_store);
    auto options = c10d::ProcessGroupGloo::Options::create(kCollectiveTimeout);
    options->devices.push_back(GlooDevice(o));
    group_ = c10::make_intrusive<c10d::ProcessGroupGloo>(store, o.rank,
                                                         o.world_size, options);
  }

  int world_size() const { return world_size_; }

  // Sums a CPU tensor over all ranks, in place.
  void AllReduceSum(torch::Tensor& t) {
    if (!group_) return;
    std::vector<torch::Tensor> tensors = {t};
    group_->allreduce(tensors)->wait(kCollectiveTimeout);
  }

  // Replaces a CPU tensor by rank 0's, in place.
  void BroadcastFromRank0(torch::Tensor& t) {
    if (!group_) return;
    std::vector<torch::Tensor> tensors = {t};
    c10d::BroadcastOptions options;
    options.rootRank = 0;
    group_->broadcast(tensors, options)->wait(kCollectiveTimeout);
  }

 private:
  // All ranks on this node: loopback. Otherwise GLOO_SOCKET_IFNAME names the
  // interface, or the address the hostname resolves to.
  static std::shared_ptr<::gloo::transport::Device> GlooDevice(
      const WorkerOptions& o) {
    if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME")) {
      return c10d::ProcessGroupGloo::createDeviceForInterface(ifname);
    }
    if (o.local_world_size == o.world_size) {
      return c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1");
    }
    return c10d::ProcessGroupGloo::createDefaultDevice();
  }

  const int rank_;
  const int world_size_;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> group_;
};

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

// Turns on autocast for the scope when the run's precision asks for it.
class AutocastScope {
 public:
  AutocastScope(const std::string& precision, const torch::Device& device)
      : enabled_(precision != "fp32"), cuda_(device.is_cuda()) {
    if (!enabled_) return;
    const auto dtype = precision == "bf16" ? at::kBFloat16 : at::kHalf;
    if (cuda_) {
      at::autocast::set_autocast_gpu_dtype(dtype);
      at::autocast::set_enabled(true);
    } else {
      at::autocast::set_autocast_cpu_dtype(dtype);
      at::autocast::set_cpu_enabled(true);
    }
  }
  ~AutocastScope() {
    if (!enabled_) return;
    if (cuda_) {
      at::autocast::set_enabled(false);
    } else {
      at::autocast::set_cpu_enabled(false);
    }
    at::autocast::clear_cache();
  }
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  const bool enabled_;
  const bool cuda_;
};

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

    torch::manual_seed(o_.seed);
    model_ = ResNetSmall(/*num_classes=*/10);
    model_->to(device_);
    Point("hpcai500_forward_flops_per_sample",
          JsonDouble(CountForwardFlopsPerSample(model_, device_)),
          EventType::kPointInTime,
          {{"convention",
            JsonString("convolutions and matrix products; multiply-add = 2")}});

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
    Point("init_stop", kJsonNull, EventType::kIntervalEnd);

    Point("run_start", kJsonNull, EventType::kIntervalStart);
    for (int epoch = 1; epoch <= c.epochs; ++epoch) {
      const JsonMembers epoch_meta = {{"epoch_num", JsonInt(epoch)}};
      Point("epoch_start", kJsonNull, EventType::kIntervalStart, epoch_meta);
      const EpochStats stats = TrainEpoch(epoch);
      Point("epoch_stop", kJsonNull, EventType::kIntervalEnd, epoch_meta);
      Point("hpcai500_epoch_stats",
            JsonObject(
                {{"samples", JsonInt(stats.samples)},
                 {"seconds", JsonDouble(stats.seconds)},
                 {"throughput",
                  JsonDouble(stats.seconds > 0 ? stats.samples / stats.seconds
                                               : 0.0)},
                 {"train_loss", JsonDouble(stats.mean_loss)}}),
            EventType::kPointInTime, epoch_meta);
      Point("eval_start", kJsonNull, EventType::kIntervalStart, epoch_meta);
      const double accuracy = Evaluate();
      Point("eval_stop", kJsonNull, EventType::kIntervalEnd, epoch_meta);
      Point("eval_accuracy", JsonDouble(accuracy), EventType::kPointInTime,
            epoch_meta);
    }
    Point("run_stop", kJsonNull, EventType::kIntervalEnd,
          {{"status", JsonString("success")}});
  }

 private:
  struct EpochStats {
    int64_t samples = 0;
    double seconds = 0;
    double mean_loss = 0;
  };

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

  // Sets every gradient to the mean over all ranks' samples of this step:
  // each rank contributes gradient * local count, then all divide by the
  // global count (ranks whose shard ran out contribute zero).
  void AverageGradients(int64_t local_samples) {
    std::vector<torch::Tensor> params = model_->parameters();
    std::vector<torch::Tensor> grads;
    for (auto& p : params) grads.push_back(p.grad());
    torch::Tensor flat = torch::zeros({0});
    {
      int64_t total = 1;
      for (auto& p : params) total += p.numel();
      flat = torch::zeros({total}, torch::kFloat32);
      int64_t offset = 0;
      for (size_t i = 0; i < params.size(); ++i) {
        if (grads[i].defined()) {
          flat.slice(0, offset, offset + params[i].numel())
              .copy_(grads[i].detach().reshape(-1).to(torch::kCPU,
                                                      torch::kFloat32));
        }
        offset += params[i].numel();
      }
      flat.slice(0, 0, offset).mul_(static_cast<double>(local_samples));
      flat[offset] = static_cast<double>(local_samples);
    }
    collectives_->AllReduceSum(flat);
    const double global_samples = flat[flat.numel() - 1].item<double>();
    flat.div_(std::max(1.0, global_samples));
    int64_t offset = 0;
    for (auto& p : params) {
      p.mutable_grad() = flat.slice(0, offset, offset + p.numel())
                             .view_as(p)
                             .to(p.device(), p.scalar_type())
                             .clone();  // its own storage: zero_grad
                                        // detaches it in place
      offset += p.numel();
    }
  }

  EpochStats TrainEpoch(int epoch) {
    model_->train();
    const std::vector<int64_t> shard = Shard(epoch);
    const int64_t batch = o_.config.batch_size;
    const auto start = std::chrono::steady_clock::now();
    EpochStats stats;
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
      if (local > 0) {
        torch::Tensor index = torch::from_blob(
            const_cast<int64_t*>(shard.data() + begin), {local}, torch::kInt64);
        torch::Tensor x =
            NormalizeImages(data_.train.images.index_select(0, index))
                .to(device_);
        torch::Tensor y = data_.train.labels.index_select(0, index).to(device_);
        torch::Tensor loss;
        {
          AutocastScope autocast(o_.precision, device_);
          loss = torch::nn::functional::cross_entropy(model_->forward(x), y,
                                                      cross_entropy);
        }
        loss.backward();
        loss_sum += loss.item<double>() * local;
        stats.samples += local;
      }
      AverageGradients(local);
      optimizer_->step();
    }
    stats.seconds = SecondsSince(start);
    stats.mean_loss = stats.samples > 0 ? loss_sum / stats.samples : 0.0;
    return stats;
  }

  // Top-1 accuracy over the whole evaluation set: each rank scores every
  // world_size-th image and the counts are summed across ranks.
  double Evaluate() {
    AverageFloatBuffers();
    model_->eval();
    torch::NoGradGuard no_grad;
    const int64_t n = data_.test.size();
    torch::Tensor mine = torch::arange(o_.rank, n, o_.world_size,
                                       torch::TensorOptions(torch::kInt64));
    int64_t correct = 0;
    for (int64_t begin = 0; begin < mine.numel(); begin += kEvalBatch) {
      torch::Tensor index =
          mine.slice(0, begin, std::min(begin + kEvalBatch, mine.numel()));
      torch::Tensor x =
          NormalizeImages(data_.test.images.index_select(0, index)).to(device_);
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
  std::unique_ptr<torch::optim::SGD> optimizer_;
  double base_lr_ = 0;
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
  if (options.precision == "fp16") {
    return options.device == "cpu"
               ? "--precision fp16 runs only on --device cuda"
               : "--precision fp16 needs loss scaling, which this worker "
                 "does not implement yet; use fp32 or bf16";
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
