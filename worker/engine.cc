#include "worker/engine.h"

#include <ATen/autocast_mode.h>
#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <future>
#include <numeric>
#include <optional>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

#include "worker/checkpoint.h"
#include "worker/data.h"
#include "worker/detection_metrics.h"
#include "worker/distributed.h"
#include "worker/energy.h"
#include "worker/ewa_data.h"
#include "worker/faster_rcnn.h"
#include "worker/flops.h"
#include "worker/image_data.h"
#include "worker/mllog_keys.h"
#include "worker/models.h"
#include "worker/precision.h"
#include "worker/resnet.h"
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

constexpr int64_t kSyntheticStepsPerEpoch = 100;  // when train_samples is 0

// Whether the run trains on random tensors (never ranked).
bool UsesSyntheticData(const ConfigInfo& c) {
  return !c.real_data || c.dataset == "synthetic";
}

// {C, H, W} and class count of `dataset`'s samples, for synthetic stand-ins.
std::pair<std::array<int64_t, 3>, int64_t> SampleShapeOf(
    const std::string& dataset) {
  if (dataset == "fashion_mnist") return {{1, 28, 28}, 10};
  if (dataset == "cifar10") return {{3, 32, 32}, 10};
  return {{3, 224, 224}, 1000};  // imagenet, synthetic
}

// A batch of either workload: images with class labels (classification) or
// with one target per image (detection).
struct Batch {
  torch::Tensor images;                  // float [B, C, H, W], CPU
  torch::Tensor labels;                  // classification: int64 [B]
  std::vector<DetectionTarget> targets;  // detection: x1 y1 x2 y2 boxes
  int64_t size() const { return images.size(0); }
};

std::optional<Batch> FromImages(std::optional<ImageBatch> b) {
  if (!b) return std::nullopt;
  return Batch{std::move(b->images), std::move(b->labels), {}};
}

// One rank's training batches and its share of the evaluation set, whatever
// the dataset. Thread-compatible: the trainer's thread only.
class TrainData {
 public:
  virtual ~TrainData() = default;
  // Samples of one epoch across all ranks, and of the evaluation set.
  virtual int64_t train_size() const = 0;
  virtual int64_t eval_size() const = 0;
  virtual std::array<int64_t, 3> sample_shape() const = 0;
  virtual int64_t num_classes() const = 0;
  // Starts `epoch` (1-based) of at most `max_batches` batches.
  virtual void StartEpoch(int epoch, int64_t max_batches) = 0;
  // The next batch of this rank's shard; nullopt once it is exhausted.
  virtual std::optional<Batch> NextTrain() = 0;
  virtual void StartEval() = 0;
  virtual std::optional<Batch> NextEval() = 0;
  // Distinct samples that could not be decoded so far (skipped).
  virtual int64_t corrupt_samples() const { return 0; }
};

// Fashion-MNIST held in memory as uint8, normalised a batch at a time.
class FashionMnistData final : public TrainData {
 public:
  explicit FashionMnistData(const WorkerOptions& o)
      : o_(o),
        data_(LoadFashionMnist(o.config.data_dir, o.config.train_samples,
                               o.config.eval_samples)) {}
  int64_t train_size() const override { return data_.train.size(); }
  int64_t eval_size() const override { return data_.test.size(); }
  std::array<int64_t, 3> sample_shape() const override { return {1, 28, 28}; }
  int64_t num_classes() const override { return 10; }
  void StartEpoch(int epoch, int64_t max_batches) override {
    shard_ = ShardIndices(data_.train.size(), o_.seed, epoch, o_.rank,
                          o_.world_size);
    next_ = 0;
    batches_left_ = max_batches;
  }
  std::optional<Batch> NextTrain() override {
    if (batches_left_-- <= 0) return std::nullopt;
    return FromImages(Take(data_.train, shard_, o_.config.batch_size));
  }
  void StartEval() override {
    shard_.clear();
    for (int64_t i = o_.rank; i < data_.test.size(); i += o_.world_size) {
      shard_.push_back(i);
    }
    next_ = 0;
  }
  std::optional<Batch> NextEval() override {
    return FromImages(Take(data_.test, shard_, kEvalBatch));
  }

 private:
  std::optional<ImageBatch> Take(const LabelledImages& set,
                                 const std::vector<int64_t>& order,
                                 int64_t batch) {
    const int64_t begin = std::min<int64_t>(next_, order.size());
    const int64_t end = std::min<int64_t>(begin + batch, order.size());
    next_ = end;
    if (end == begin) return std::nullopt;
    torch::Tensor index =
        torch::from_blob(const_cast<int64_t*>(order.data() + begin),
                         {end - begin}, torch::kInt64);
    return ImageBatch{NormalizeImages(set.images.index_select(0, index)),
                      set.labels.index_select(0, index)};
  }

  const WorkerOptions& o_;
  FashionMnist data_;
  std::vector<int64_t> shard_;
  int64_t next_ = 0;
  int64_t batches_left_ = 0;
};

// CIFAR-10 or an ImageNet folder tree, decoded by ImageLoader threads.
class LoadedImageData final : public TrainData {
 public:
  LoadedImageData(const WorkerOptions& o, std::unique_ptr<ImageDataset> train,
                  std::unique_ptr<ImageDataset> eval)
      : o_(o), train_(std::move(train)), eval_(std::move(eval)) {}
  int64_t train_size() const override { return train_->size(); }
  int64_t eval_size() const override { return eval_->size(); }
  std::array<int64_t, 3> sample_shape() const override {
    return train_->sample_shape();
  }
  int64_t num_classes() const override { return train_->num_classes(); }
  void StartEpoch(int epoch, int64_t max_batches) override {
    if (!train_loader_ || max_batches != max_batches_) {
      train_loader_.reset();
      max_batches_ = max_batches;
      train_loader_ = std::make_unique<ImageLoader>(
          *train_, Options(/*shuffle=*/true, max_batches));
    }
    train_loader_->StartEpoch(epoch);
  }
  std::optional<Batch> NextTrain() override {
    return FromImages(train_loader_->Next());
  }
  void StartEval() override {
    if (!eval_loader_) {
      eval_loader_ = std::make_unique<ImageLoader>(
          *eval_, Options(/*shuffle=*/false, /*max_batches=*/0));
    }
    eval_loader_->StartEpoch(0);
  }
  std::optional<Batch> NextEval() override {
    return FromImages(eval_loader_->Next());
  }
  int64_t corrupt_samples() const override {
    return (train_loader_ ? train_loader_->corrupt_samples() : 0) +
           (eval_loader_ ? eval_loader_->corrupt_samples() : 0);
  }

 private:
  LoaderOptions Options(bool shuffle, int64_t max_batches) const {
    LoaderOptions l;
    l.batch_size = o_.config.batch_size;
    l.threads = o_.threads;
    l.seed = o_.seed;
    l.rank = o_.rank;
    l.world_size = o_.world_size;
    l.max_batches = max_batches;
    l.shuffle = shuffle;
    return l;
  }

  const WorkerOptions& o_;
  std::unique_ptr<ImageDataset> train_;
  std::unique_ptr<ImageDataset> eval_;
  std::unique_ptr<ImageLoader> train_loader_;
  std::unique_ptr<ImageLoader> eval_loader_;
  int64_t max_batches_ = 0;
};

// One fixed random batch on the device, for throughput: every step trains on
// it and evaluation scores it (a trivial figure; the run is unranked).
class SyntheticData final : public TrainData {
 public:
  SyntheticData(const WorkerOptions& o, const torch::Device& device)
      : o_(o),
        shape_(SampleShapeOf(o.config.dataset)),
        batch_(o.config.batch_size, shape_.first, shape_.second,
               o.seed + static_cast<uint64_t>(o.rank), device) {}
  int64_t train_size() const override {
    return o_.config.train_samples > 0
               ? o_.config.train_samples
               : kSyntheticStepsPerEpoch * o_.config.batch_size * o_.world_size;
  }
  int64_t eval_size() const override {
    return o_.config.batch_size * o_.world_size;
  }
  std::array<int64_t, 3> sample_shape() const override { return shape_.first; }
  int64_t num_classes() const override { return shape_.second; }
  void StartEpoch(int /*epoch*/, int64_t max_batches) override {
    batches_left_ = max_batches;
  }
  std::optional<Batch> NextTrain() override {
    if (batches_left_-- <= 0) return std::nullopt;
    return Batch{batch_.images(), batch_.labels(), {}};
  }
  void StartEval() override { eval_done_ = false; }
  std::optional<Batch> NextEval() override {
    if (eval_done_) return std::nullopt;
    eval_done_ = true;
    return Batch{batch_.images(), batch_.labels(), {}};
  }

 private:
  const WorkerOptions& o_;
  const std::pair<std::array<int64_t, 3>, int64_t> shape_;
  SyntheticImages batch_;
  int64_t batches_left_ = 0;
  bool eval_done_ = false;
};

// Writes the year files of a generated-data config that are missing from
// its data folder (hpcai500-worker make-ewa with the config's grid, seeded
// by the year). Processes may race: each writes its own temporary and
// renames it, and the generator gives the same bytes to all.
void GenerateMissingEwaYears(const ConfigInfo& c) {
  if (c.generate_samples <= 0) return;
  std::vector<int> years = c.train_years;
  years.insert(years.end(), c.eval_years.begin(), c.eval_years.end());
  std::filesystem::create_directories(c.data_dir);
  for (int year : years) {
    const std::string path =
        c.data_dir + "/climo_" + std::to_string(year) + ".h5";
    if (std::filesystem::exists(path)) continue;
    EwaGeneratorOptions g;
    g.out = path + ".tmp." + std::to_string(::getpid());
    g.samples = c.generate_samples;
    g.height = c.generate_height;
    g.width = c.generate_width;
    g.seed = static_cast<uint64_t>(year);
    WriteSyntheticEwaFile(g);
    std::filesystem::rename(g.out, path);
  }
}

// The Extreme Weather data set: the config's train and evaluation years,
// normalised with the training years' per-channel statistics (cached beside
// the files). Each rank reads its shard of the epoch's permutation; the next
// batch is read on a helper thread while the current one trains.
class EwaData final : public TrainData {
 public:
  explicit EwaData(const WorkerOptions& o) : o_(o) {
    const ConfigInfo& c = o.config;
    GenerateMissingEwaYears(c);
    const std::vector<std::string> train_files =
        EwaFilesForYears(c.data_dir, c.train_years);
    train_ = std::make_unique<EwaDataset>(train_files);
    eval_ = std::make_unique<EwaDataset>(
        EwaFilesForYears(c.data_dir, c.eval_years));
    if (eval_->height() != train_->height() ||
        eval_->width() != train_->width()) {
      throw std::runtime_error("extreme_weather: evaluation years have a " +
                               std::to_string(eval_->height()) + "x" +
                               std::to_string(eval_->width()) +
                               " grid, training years " +
                               std::to_string(train_->height()) + "x" +
                               std::to_string(train_->width()));
    }
    const EwaChannelStats stats = LoadOrComputeEwaStats(train_files);
    train_->set_stats(stats);
    eval_->set_stats(stats);
    train_size_ = Limit(train_->size(), c.train_samples, "train_samples");
    eval_size_ = Limit(eval_->size(), c.eval_samples, "eval_samples");
  }
  ~EwaData() override {
    if (pending_.valid()) pending_.wait();
  }
  int64_t train_size() const override { return train_size_; }
  int64_t eval_size() const override { return eval_size_; }
  std::array<int64_t, 3> sample_shape() const override {
    return {kEwaChannels, train_->height(), train_->width()};
  }
  int64_t num_classes() const override { return kEwaNumClasses; }
  void StartEpoch(int epoch, int64_t max_batches) override {
    Start(*train_,
          ShardIndices(train_size_, o_.seed, epoch, o_.rank, o_.world_size),
          o_.config.batch_size, max_batches);
  }
  std::optional<Batch> NextTrain() override { return Next(); }
  void StartEval() override {
    std::vector<int64_t> shard;
    for (int64_t i = o_.rank; i < eval_size_; i += o_.world_size) {
      shard.push_back(i);
    }
    Start(*eval_, std::move(shard), o_.config.batch_size, /*max_batches=*/0);
  }
  std::optional<Batch> NextEval() override { return Next(); }

 private:
  static int64_t Limit(int64_t size, int64_t wanted, const char* key) {
    if (wanted <= 0) return size;
    if (wanted > size) {
      throw std::runtime_error("extreme_weather: " + std::string(key) + " " +
                               std::to_string(wanted) + " exceeds the " +
                               std::to_string(size) + " samples of its years");
    }
    return wanted;
  }

  void Start(const EwaDataset& set, std::vector<int64_t> order, int64_t batch,
             int64_t max_batches) {
    if (pending_.valid()) pending_.wait();
    set_ = &set;
    order_ = std::move(order);
    batch_ = batch;
    next_ = 0;
    batches_left_ = max_batches > 0 ? max_batches : INT64_MAX;
    Prefetch();
  }

  // Starts reading the next batch of `order_`, if any.
  void Prefetch() {
    const int64_t begin = std::min<int64_t>(next_, order_.size());
    const int64_t end = std::min<int64_t>(begin + batch_, order_.size());
    next_ = end;
    if (begin == end || batches_left_-- <= 0) return;
    std::vector<int64_t> indices(order_.begin() + begin, order_.begin() + end);
    pending_ = std::async(std::launch::async,
                          [set = set_, indices = std::move(indices)] {
                            return Read(*set, indices);
                          });
  }

  std::optional<Batch> Next() {
    if (!pending_.valid()) return std::nullopt;
    Batch batch = pending_.get();
    Prefetch();
    return batch;
  }

  // Samples `indices` as a batch; boxes turn from the dataset's [ymin, xmin,
  // ymax, xmax] into the detector's (x1, y1, x2, y2).
  static Batch Read(const EwaDataset& set,
                    const std::vector<int64_t>& indices) {
    std::vector<torch::Tensor> images;
    Batch batch;
    const torch::Tensor xyxy = torch::tensor({1, 0, 3, 2}, torch::kInt64);
    for (int64_t index : indices) {
      EwaSample sample = set.Read(index);
      images.push_back(sample.image);
      batch.targets.push_back(
          {sample.boxes.index_select(1, xyxy).contiguous(), sample.labels});
    }
    batch.images = torch::stack(images);
    return batch;
  }

  const WorkerOptions& o_;
  std::unique_ptr<EwaDataset> train_;
  std::unique_ptr<EwaDataset> eval_;
  int64_t train_size_ = 0;
  int64_t eval_size_ = 0;
  // The pass in progress.
  const EwaDataset* set_ = nullptr;
  std::vector<int64_t> order_;
  int64_t batch_ = 1;
  int64_t next_ = 0;
  int64_t batches_left_ = 0;
  std::future<Batch> pending_;
};

// Opens the run's data. Throws std::runtime_error naming the data folder
// when it does not exist.
std::unique_ptr<TrainData> OpenTrainData(const WorkerOptions& o,
                                         const torch::Device& device) {
  const ConfigInfo& c = o.config;
  if (UsesSyntheticData(c)) return std::make_unique<SyntheticData>(o, device);
  if (!std::filesystem::is_directory(c.data_dir) && c.generate_samples == 0) {
    throw std::runtime_error("data folder " + c.data_dir + " of config " +
                             c.name + " (dataset " + c.dataset +
                             ") does not exist; --data DIR overrides it");
  }
  if (c.dataset == "fashion_mnist") {
    return std::make_unique<FashionMnistData>(o);
  }
  if (c.dataset == "extreme_weather") return std::make_unique<EwaData>(o);
  // train_samples / eval_samples take a subset spread over the whole set
  // (an image folder is sorted by class).
  auto subsets = [&c](std::unique_ptr<ImageDataset> train,
                      std::unique_ptr<ImageDataset> eval) {
    return std::make_pair(
        SpreadSubset(std::move(train), c.train_samples, "train_samples"),
        SpreadSubset(std::move(eval), c.eval_samples, "eval_samples"));
  };
  auto [train, eval] =
      c.dataset == "cifar10"
          ? subsets(std::make_unique<Cifar10Dataset>(c.data_dir, Split::kTrain),
                    std::make_unique<Cifar10Dataset>(c.data_dir, Split::kEval))
          : subsets(std::make_unique<ImageFolderDataset>(c.data_dir + "/train",
                                                         Split::kTrain),
                    std::make_unique<ImageFolderDataset>(c.data_dir + "/val",
                                                         Split::kEval));
  return std::make_unique<LoadedImageData>(o, std::move(train),
                                           std::move(eval));
}

// `model` for samples of `shape` and `num_classes` classes: ResNetSmall, or
// the ResNet family (the small-input stem for images up to 64 pixels).
torch::nn::AnyModule BuildModel(const std::string& model,
                                const std::array<int64_t, 3>& shape,
                                int64_t num_classes) {
  if (model == "resnet_small")
    return torch::nn::AnyModule(ResNetSmall(num_classes));
  ResNetOptions r;
  r.depth = ResNetDepthFromName(model);
  r.num_classes = num_classes;
  r.in_channels = shape[0];
  r.small_input_stem = shape[1] <= 64;
  return torch::nn::AnyModule(ResNet(r));
}

// Faster R-CNN for `c.model` (faster_rcnn_resnetN) on `shape`'s grid, as
// DetectorOptionsFor (worker/faster_rcnn.h) configures it.
FasterRCNN BuildDetector(const ConfigInfo& c,
                         const std::array<int64_t, 3>& shape, uint64_t seed) {
  FasterRCNNOptions f =
      DetectorOptionsFor(c.model, /*in_channels=*/shape[0],
                         /*rows=*/shape[1], c.rois_per_image, c.box_head_width);
  f.num_classes = kEwaNumClasses;
  f.seed = seed;
  return FasterRCNN(f);
}

// Class names of the Extreme Weather labels, for per-class AP.
constexpr std::array<const char*, kEwaNumClasses> kEwaClassNames = {
    "tropical_depression", "tropical_cyclone", "extratropical_cyclone",
    "atmospheric_river"};

// LARS (layer-wise adaptive rate scaling) as MLPerf's ResNet reference uses
// it: each parameter of the first group (conv and linear weights) has its
// gradient replaced by trust * (g + wd * w), trust = eta * |w| /
// (|g| + wd * |w|) (1 when either norm is 0), before SGD's momentum step;
// the second group (biases, BatchNorm) is plain SGD without weight decay.
// Momentum follows PyTorch's convention (lr applied after the buffer).
class Lars final : public torch::optim::SGD {
 public:
  Lars(std::vector<torch::optim::OptimizerParamGroup> groups,
       torch::optim::SGDOptions defaults, double eta, double weight_decay)
      : SGD(std::move(groups), std::move(defaults)),
        eta_(eta),
        weight_decay_(weight_decay) {}

  torch::Tensor step(LossClosure closure = nullptr) override {
    {
      torch::NoGradGuard no_grad;
      for (torch::Tensor& p : param_groups()[0].params()) {
        if (!p.grad().defined()) continue;
        torch::Tensor& g = p.mutable_grad();
        torch::Tensor w_norm = p.norm();
        torch::Tensor g_norm = g.norm();
        torch::Tensor trust =
            torch::where(w_norm.gt(0).logical_and(g_norm.gt(0)),
                         eta_ * w_norm / (g_norm + weight_decay_ * w_norm),
                         torch::ones_like(w_norm));
        g.add_(p, weight_decay_).mul_(trust);
      }
    }
    return SGD::step(std::move(closure));
  }

 private:
  const double eta_;
  const double weight_decay_;
};

// The CUDA device of a local rank. An agent gives each rank exactly its own
// GPU (CUDA_VISIBLE_DEVICES), which the rank then sees as device 0; a rank
// started without that sees every GPU of the node and takes its local rank's.
int CudaDeviceIndex(int local_rank) {
  return torch::cuda::device_count() == 1 ? 0 : local_rank;
}

// One rank of an image-classification run.
class Trainer {
 public:
  Trainer(const WorkerOptions& options, EventLog* log)
      : o_(options),
        log_(log),
        device_(options.device == "cuda"
                    ? torch::Device(torch::kCUDA,
                                    CudaDeviceIndex(options.local_rank))
                    : torch::Device(torch::kCPU)) {}

  void Run() {
    Point("init_start", kJsonNull, EventType::kIntervalStart);
    const ConfigInfo& c = o_.config;
    const int64_t global_batch =
        static_cast<int64_t>(c.batch_size) * o_.world_size;
    EmitMlperfSubmission(*log_, o_);
    detection_ = c.workload == "extreme_weather";
    Point(
        "submission_benchmark",
        JsonString(o_.mllog_submission && !detection_ ? "resnet" : c.workload));
    const bool synthetic = UsesSyntheticData(c);
    Point("hpcai500_config", JsonString(c.name), EventType::kPointInTime,
          {{"model", JsonString(c.model)},
           {"dataset", JsonString(synthetic ? "synthetic" : c.dataset)}});
    if (synthetic) {
      Point("hpcai500_unranked",
            JsonString("synthetic data: for throughput only"));
    }
    Point("seed", JsonInt(static_cast<int64_t>(o_.seed)));
    Point("global_batch_size", JsonInt(global_batch));

    data_ = OpenTrainData(o_, device_);
    steps_per_epoch_ = StepsPerEpoch();
    Point("train_samples", JsonInt(SamplesPerEpochAllRanks()));
    Point("eval_samples", JsonInt(data_->eval_size()));

    if (o_.deterministic) EnableDeterminism(o_.threads);
    torch::manual_seed(o_.seed);
    if (detection_) {
      detector_ = BuildDetector(c, data_->sample_shape(), o_.seed);
      module_ = detector_.ptr();
    } else {
      model_ = BuildModel(c.model, data_->sample_shape(), data_->num_classes());
      module_ = model_.ptr();
    }
    module_->to(device_);
    // The detector keeps NCHW: its RoIAlign and box ops index the feature
    // map directly.
    channels_last_ =
        !detection_ && WantsChannelsLast(o_.precision, /*asked=*/false);
    if (channels_last_) ToChannelsLast(*module_);
    collectives_ = std::make_unique<Collectives>(o_);
    BroadcastModelState();
    // lr scales linearly with the global batch (config lr is per 256
    // images), warms up linearly over the config's warmup epochs, then
    // follows a cosine to zero at the end of the budget, stepped every batch.
    base_lr_ = c.lr * static_cast<double>(global_batch) / 256.0;
    optimizer_ = MakeOptimizer();
    EmitMlperfHyperparameters(
        *log_, o_, MlperfRunFacts{global_batch, base_lr_, steps_per_epoch_});
    reducer_ = std::make_unique<GradientReducer>(
        collectives_.get(), module_->parameters(),
        ReducerOptions{o_.compression, o_.powersgd_rank, o_.bucket_mb,
                       o_.powersgd_warmup_steps});
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
      Point("block_start", kJsonNull, EventType::kIntervalStart,
            {{"first_epoch_num", JsonInt(epoch)}, {"epoch_count", JsonInt(1)}});
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
          {"loss_scale", JsonDouble(scaler_.scale())},
          {"corrupt_samples", JsonInt(data_->corrupt_samples())}};
      if (stats.energy_joules) {
        measured.emplace_back("energy_joules",
                              JsonDouble(*stats.energy_joules));
        measured.emplace_back("energy_source", JsonString(energy_->source()));
      }
      Point("hpcai500_epoch_stats", JsonObject(measured),
            EventType::kPointInTime, epoch_meta);
      Point("eval_start", kJsonNull, EventType::kIntervalStart, epoch_meta);
      const double eval_started = MonotonicSeconds();
      const EvalResult eval = Evaluate();
      JsonMembers eval_meta = epoch_meta;
      eval_meta.emplace_back("eval_seconds",
                             JsonDouble(MonotonicSeconds() - eval_started));
      Point("eval_stop", kJsonNull, EventType::kIntervalEnd, eval_meta);
      Point("eval_accuracy", JsonDouble(eval.quality), EventType::kPointInTime,
            epoch_meta);
      if (detection_) {
        JsonMembers ap;
        for (size_t k = 0; k < eval.ap.size(); ++k) {
          ap.emplace_back(kEwaClassNames[k], JsonDouble(eval.ap[k]));
        }
        Point("hpcai500_eval_ap50", JsonObject(ap), EventType::kPointInTime,
              epoch_meta);
      } else {
        Point("eval_top5", JsonDouble(eval.top5), EventType::kPointInTime,
              epoch_meta);
      }
      Point("block_stop", kJsonNull, EventType::kIntervalEnd,
            {{"first_epoch_num", JsonInt(epoch)}});
      SaveCheckpointAfter(epoch);
    }
    Point("hpcai500_param_checksum", JsonString(ParameterChecksum(*module_)));
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

  struct EvalResult {
    double quality = 0;      // top-1 (classification) or mAP@0.5
    double top5 = 0;         // classification
    std::vector<double> ap;  // detection: AP@0.5 per class, NaN if absent
  };

  // The training loss of a batch already on the device, its forward pass
  // counted (the detector's losses are part of its forward pass; the
  // classifier's cross entropy is not counted). The first batch also gives
  // the per-sample figure the score uses.
  torch::Tensor ForwardLoss(const torch::Tensor& x, const torch::Tensor& y,
                            const std::vector<DetectionTarget>& targets,
                            EpochStats& stats) {
    FlopCounter counter;
    torch::Tensor logits;
    torch::Tensor loss;
    if (detection_) {
      loss = FasterRCNNImpl::TotalLoss(detector_->Losses(x, targets));
    } else {
      logits = model_.forward(x);
    }
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
    if (detection_) return loss;
    return torch::nn::functional::cross_entropy(
        logits, y,
        torch::nn::functional::CrossEntropyFuncOptions().label_smoothing(
            o_.config.label_smoothing));
  }

  // SGD with momentum, or LARS. ResNet-family models decay only conv and
  // linear weights (dim > 1), as the reference recipe does; resnet_small
  // decays every parameter.
  std::unique_ptr<torch::optim::SGD> MakeOptimizer() {
    const ConfigInfo& c = o_.config;
    const bool split = c.model != "resnet_small" || c.optimizer == "lars";
    std::vector<torch::Tensor> weights;
    std::vector<torch::Tensor> others;
    for (const torch::Tensor& p : module_->parameters()) {
      (split && p.dim() <= 1 ? others : weights).push_back(p);
    }
    const bool lars = c.optimizer == "lars";
    auto options = [&](double weight_decay) {
      return std::make_unique<torch::optim::SGDOptions>(
          torch::optim::SGDOptions(base_lr_)
              .momentum(c.momentum)
              .weight_decay(weight_decay));
    };
    std::vector<torch::optim::OptimizerParamGroup> groups;
    groups.emplace_back(weights, options(lars ? 0.0 : c.weight_decay));
    if (!others.empty()) groups.emplace_back(others, options(0.0));
    torch::optim::SGDOptions defaults =
        torch::optim::SGDOptions(base_lr_).momentum(c.momentum);
    if (lars) {
      return std::make_unique<Lars>(std::move(groups), defaults,
                                    kLarsTrustCoefficient, c.weight_decay);
    }
    return std::make_unique<torch::optim::SGD>(std::move(groups), defaults);
  }

  void Point(std::string_view key, std::string_view value,
             EventType type = EventType::kPointInTime,
             const JsonMembers& metadata = {}) {
    log_->Emit(type, key, value, metadata);
  }

  // Rank r's shard holds every world_size-th sample; all ranks take the
  // same number of steps (the largest shard's), so collectives pair up.
  int64_t StepsPerEpoch() const {
    const int64_t n = data_->train_size();
    const int64_t largest_shard = (n + o_.world_size - 1) / o_.world_size;
    int64_t steps =
        (largest_shard + o_.config.batch_size - 1) / o_.config.batch_size;
    if (o_.steps_per_epoch > 0) steps = std::min(steps, o_.steps_per_epoch);
    return steps;
  }

  int64_t ShardSize(int rank) const {
    const int64_t n = data_->train_size();
    return n / o_.world_size + (rank < n % o_.world_size ? 1 : 0);
  }

  int64_t SamplesPerEpochAllRanks() const {
    int64_t total = 0;
    for (int r = 0; r < o_.world_size; ++r) {
      total += std::min(ShardSize(r), steps_per_epoch_ * o_.config.batch_size);
    }
    return total;
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
    std::vector<torch::Tensor> state = module_->parameters();
    for (auto& b : module_->buffers()) state.push_back(b);
    torch::Tensor flat = Flatten(state, /*extra=*/0);
    collectives_->BroadcastFromRank0(flat);
    Unflatten(flat, state);
  }

  // Averages BatchNorm running statistics so every rank evaluates the same
  // model.
  void AverageFloatBuffers() {
    std::vector<torch::Tensor> buffers;
    for (auto& b : module_->buffers()) {
      if (b.is_floating_point()) buffers.push_back(b);
    }
    torch::Tensor flat = Flatten(buffers, /*extra=*/0);
    collectives_->AllReduceSum(flat);
    flat.div_(collectives_->world_size());
    Unflatten(flat, buffers);
  }

  EpochStats TrainEpoch(int epoch) {
    module_->train();
    data_->StartEpoch(epoch, steps_per_epoch_);
    const auto start = std::chrono::steady_clock::now();
    EpochStats stats;
    const CommStats comm_before = reducer_->stats();
    EpochClock clock;
    energy_->StartEpoch();
    double loss_sum = 0;
    for (int64_t step = 0; step < steps_per_epoch_; ++step) {
      SetLearningRate(LearningRate((epoch - 1) * steps_per_epoch_ + step));
      optimizer_->zero_grad();
      StepTimer wait_for_batch(&clock, Phase::kInputWait);
      std::optional<Batch> next = data_->NextTrain();
      wait_for_batch.Stop();
      const int64_t local = next ? next->size() : 0;
      watchdog_->Beat();
      watchdog_->SetPhase("gradient all-reduce (sample count)");
      reducer_->BeginStep(local);
      watchdog_->SetPhase("forward and backward");
      energy_->Poll(clock.now());
      if (local > 0) {
        StepTimer input_wait(&clock, Phase::kInputWait);
        torch::Tensor x = next->images.to(device_);
        if (channels_last_) x = ChannelsLastInput(x);
        torch::Tensor y;
        if (next->labels.defined()) y = next->labels.to(device_);
        std::vector<DetectionTarget> targets;
        for (const DetectionTarget& t : next->targets) {
          targets.push_back({t.boxes.to(device_), t.labels.to(device_)});
        }
        input_wait.Stop();
        StepTimer compute(&clock, Phase::kCompute);
        torch::Tensor loss;
        {
          AutocastScope autocast(o_.precision, device_);
          loss = ForwardLoss(x, y, targets, stats);
        }
        scaler_.Scale(loss).backward();
        loss_sum += loss.item<double>() * local;
        stats.samples += local;
      }
      watchdog_->SetPhase("gradient all-reduce");
      reducer_->FinishStep();
      watchdog_->SetPhase("optimizer step");
      StepTimer compute(&clock, Phase::kCompute);
      if (!scaler_.Step(*optimizer_, module_->parameters())) {
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
    TrainingState state{module_.get(), optimizer_.get(), &scaler_, 0,
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
        o_.checkpoint_dir, TrainingState{module_.get(), optimizer_.get(),
                                         &scaler_, epoch, Fingerprint()});
    Point("hpcai500_checkpoint", JsonString(path), EventType::kPointInTime,
          {{"epoch_num", JsonInt(epoch)}});
  }

  // The quality of the model on the whole evaluation set, every rank
  // scoring its shard: top-1 and top-5 for classification, mAP@0.5 for
  // detection. BatchNorm statistics are averaged first so every rank
  // evaluates the same model.
  EvalResult Evaluate() {
    watchdog_->Beat();
    watchdog_->SetPhase("evaluation (buffer all-reduce)");
    AverageFloatBuffers();
    watchdog_->SetPhase("evaluation");
    module_->eval();
    torch::NoGradGuard no_grad;
    const EvalResult result =
        detection_ ? EvaluateDetection() : EvaluateClassification();
    module_->train();
    return result;
  }

  // Correct top-1 and top-5 counts summed across ranks.
  EvalResult EvaluateClassification() {
    int64_t correct = 0;
    int64_t correct_top5 = 0;
    int64_t seen = 0;
    const int64_t k = std::min<int64_t>(5, data_->num_classes());
    data_->StartEval();
    while (std::optional<Batch> batch = data_->NextEval()) {
      watchdog_->Beat();
      torch::Tensor x = batch->images.to(device_);
      if (channels_last_) x = ChannelsLastInput(x);
      torch::Tensor y = batch->labels.to(device_);
      torch::Tensor logits;
      {
        AutocastScope autocast(o_.precision, device_);
        logits = model_.forward(x);
      }
      torch::Tensor top = std::get<1>(logits.topk(k, /*dim=*/1));
      torch::Tensor hits = top.eq(y.unsqueeze(1));
      correct += hits.select(1, 0).sum().item<int64_t>();
      correct_top5 += hits.any(1).sum().item<int64_t>();
      seen += batch->size();
    }
    torch::Tensor counts = torch::tensor(
        {static_cast<double>(correct), static_cast<double>(correct_top5),
         static_cast<double>(seen)},
        torch::kFloat64);
    watchdog_->SetPhase("evaluation (count all-reduce)");
    collectives_->AllReduceSum(counts);
    const double total = counts[2].item<double>();
    if (total <= 0) return {};
    return {
        counts[0].item<double>() / total, counts[1].item<double>() / total, {}};
  }

  // AP is not a sum over shards, so every rank's detections and ground truth
  // are gathered (as DetectionEvaluator rows) and each rank scores the whole
  // list. Image ids are unique across ranks: local index x world + rank.
  EvalResult EvaluateDetection() {
    DetectionEvaluator local(kEwaNumClasses);
    data_->StartEval();
    while (std::optional<Batch> batch = data_->NextEval()) {
      watchdog_->Beat();
      std::vector<Detections> found;
      {
        AutocastScope autocast(o_.precision, device_);
        found = detector_->Detect(batch->images.to(device_));
      }
      for (size_t i = 0; i < found.size(); ++i) {
        local.AddImage(local.images() * o_.world_size + o_.rank, found[i].boxes,
                       found[i].scores, found[i].labels,
                       batch->targets[i].boxes, batch->targets[i].labels);
      }
    }
    watchdog_->SetPhase("evaluation (detection gather)");
    const torch::Tensor all =
        GatherRows(local.Rows(), DetectionEvaluator::kRowWidth);
    DetectionEvaluator everyone(kEwaNumClasses);
    everyone.AddRows(all.data_ptr<double>(), all.numel());
    const MapResult map = everyone.Compute();
    return {map.map, 0.0, map.ap};
  }

  // Every rank's `rows` (width `width`) concatenated in rank order, as a
  // CPU float64 [N, width] tensor: the row counts are summed into one
  // vector, then each rank's rows are placed in its slot of a zero tensor
  // sized for the largest and summed.
  torch::Tensor GatherRows(const std::vector<double>& rows, int64_t width) {
    const int world = o_.world_size;
    const int64_t mine = static_cast<int64_t>(rows.size()) / width;
    torch::Tensor counts = torch::zeros({world}, torch::kFloat64);
    counts[o_.rank] = static_cast<double>(mine);
    collectives_->AllReduceSum(counts);
    const auto largest = static_cast<int64_t>(counts.max().item<double>());
    if (largest == 0) return torch::zeros({0, width}, torch::kFloat64);
    torch::Tensor slots =
        torch::zeros({world, largest, width}, torch::kFloat64);
    if (mine > 0) {
      slots[o_.rank]
          .narrow(0, 0, mine)
          .copy_(torch::from_blob(const_cast<double*>(rows.data()),
                                  {mine, width}, torch::kFloat64));
    }
    collectives_->AllReduceSum(slots);
    std::vector<torch::Tensor> parts;
    for (int r = 0; r < world; ++r) {
      parts.push_back(slots[r].narrow(
          0, 0, static_cast<int64_t>(counts[r].item<double>())));
    }
    return torch::cat(parts).contiguous();
  }

  // Constant after construction.
  const WorkerOptions& o_;
  EventLog* const log_;
  const torch::Device device_;

  std::unique_ptr<TrainData> data_;
  int64_t steps_per_epoch_ = 0;
  bool detection_ = false;  // extreme_weather: detector_, else model_
  torch::nn::AnyModule model_;
  FasterRCNN detector_{nullptr};
  std::shared_ptr<torch::nn::Module> module_;  // model_'s or detector_'s
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
  const bool detector =
      c.model == "faster_rcnn_resnet18" || c.model == "faster_rcnn_resnet34" ||
      c.model == "faster_rcnn_resnet50" || c.model == "faster_rcnn_resnet101";
  const bool known_model = c.model == "resnet_small" || c.model == "resnet18" ||
                           c.model == "resnet34" || c.model == "resnet50" ||
                           c.model == "resnet101" || detector;
  if (!known_model) {
    return "config " + c.name + ": model '" + c.model +
           "' is not built by this worker";
  }
  if (c.workload == "extreme_weather") {
    if (!detector || c.dataset != "extreme_weather") {
      return "config " + c.name +
             ": extreme_weather trains faster_rcnn_resnetN on dataset "
             "extreme_weather, not " +
             c.model + " on " + c.dataset;
    }
    if (!c.real_data) {
      return "config " + c.name +
             ": extreme_weather has no synthetic mode (--data synthetic); "
             "generate data with hpcai500-worker make-ewa";
    }
  } else if (detector || c.dataset == "extreme_weather") {
    return "config " + c.name + ": " + c.model + " on " + c.dataset +
           " is an extreme_weather model, not an image_classification one";
  }
  if (c.dataset != "fashion_mnist" && c.dataset != "cifar10" &&
      c.dataset != "imagenet" && c.dataset != "synthetic" &&
      c.dataset != "extreme_weather") {
    return "config " + c.name + ": dataset '" + c.dataset +
           "' is not read by this worker";
  }
  if (c.model == "resnet_small" && c.dataset != "fashion_mnist") {
    return "config " + c.name +
           ": resnet_small takes 28x28 Fashion-MNIST images only";
  }
  if (c.optimizer != "sgd" && c.optimizer != "lars") {
    return "config " + c.name + ": optimizer '" + c.optimizer +
           "' is not sgd or lars";
  }
  if (options.device == "cuda") {
    if (!torch::cuda::is_available()) {
      return "--device cuda: no CUDA device is available to this LibTorch";
    }
    if (torch::cuda::device_count() > 1 &&
        options.local_rank >= static_cast<int>(torch::cuda::device_count())) {
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
    if (!KeepFreedMemoryForReuse()) {
      std::fprintf(stderr,
                   "hpcai500-worker rank %d: malloc kept its own thresholds\n",
                   options.rank);
    }
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
