#include "worker/data/open_dataset.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <future>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "worker/data/device_input.h"
#include "worker/data/ewa_file.h"
#include "worker/data/ewa_generator.h"
#include "worker/data/fashion_mnist.h"
#include "worker/data/gpu_image_loader.h"
#include "worker/data/image_loader.h"
#include "worker/data/nvjpeg_decoder.h"
#include "worker/data/sharding.h"

namespace hpcai500::worker {

namespace {

constexpr int64_t kEvalBatch = 500;  // Fashion-MNIST evaluation batches
constexpr int64_t kSyntheticStepsPerEpoch = 100;  // when train_samples is 0

// {C, H, W} and class count of `dataset`'s samples, for synthetic stand-ins.
std::pair<std::array<int64_t, 3>, int64_t> SampleShapeOf(
    const std::string& dataset) {
  if (dataset == "fashion_mnist") return {{1, 28, 28}, 10};
  if (dataset == "cifar10") return {{3, 32, 32}, 10};
  return {{3, 224, 224}, 1000};  // imagenet, synthetic
}

std::optional<Batch> FromImages(std::optional<ImageBatch> b) {
  if (!b) return std::nullopt;
  return Batch{
      std::move(b->images), std::move(b->labels), {}, b->normalization};
}

// Fashion-MNIST held in memory as uint8, normalised a batch at a time.
class FashionMnistData final : public Dataset {
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
    shard_ = ShardIndices(data_.train.size(), *o_.args.seed, epoch, o_.rank,
                          o_.world_size);
    next_ = 0;
    batches_left_ = max_batches;
  }
  std::optional<Batch> NextTrain() override {
    if (batches_left_-- <= 0) return std::nullopt;
    return FromImages(Take(data_.train, shard_, o_.config.batch_size));
  }
  void StartEval() override {
    shard_ = EvalShardIndices(data_.test.size(), o_.rank, o_.world_size);
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

// The training batches of --gpu-decode: nvJPEG (`nvjpeg`) on the rank's GPU.
std::unique_ptr<BatchSource> GpuDecodedBatches(
    const ImageDataset& train, LoaderOptions options,
    std::shared_ptr<const NvjpegApi> nvjpeg, const torch::Device& device,
    int rank) {
  auto decoder = std::make_unique<NvjpegDecoder>(std::move(nvjpeg), device);
  std::fprintf(stderr,
               "hpcai500-worker rank %d: --gpu-decode: nvJPEG's %s decoder "
               "on %s\n",
               rank, decoder->backend().c_str(), device.str().c_str());
  return std::make_unique<GpuImageLoader>(train, std::move(options),
                                          std::move(decoder));
}

// CIFAR-10 or an ImageNet folder tree, decoded by ImageLoader threads (the
// training split of --gpu-decode: by nvJPEG on the device).
class LoadedImageData final : public Dataset {
 public:
  LoadedImageData(const WorkerOptions& o, std::unique_ptr<ImageDataset> train,
                  std::unique_ptr<ImageDataset> eval,
                  const torch::Device& device)
      : o_(o),
        device_(device),
        // Opened here, while the run initialises: a missing library ends
        // it before its timed part.
        nvjpeg_(*o.args.gpu_decode ? OpenNvjpeg(NvjpegLibraryCandidates())
                                   : nullptr),
        train_(std::move(train)),
        eval_(std::move(eval)) {}
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
      LoaderOptions options = Options(/*shuffle=*/true, max_batches);
      if (nvjpeg_) {
        train_loader_ = GpuDecodedBatches(*train_, std::move(options), nvjpeg_,
                                          device_, o_.rank);
      } else {
        train_loader_ = std::make_unique<ImageLoader>(*train_, options);
      }
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
    l.threads = static_cast<int>(*o_.args.threads);
    l.seed = *o_.args.seed;
    l.rank = o_.rank;
    l.world_size = o_.world_size;
    l.max_batches = max_batches;
    l.shuffle = shuffle;
    l.pin_memory = device_.is_cuda();
    return l;
  }

  const WorkerOptions& o_;
  const torch::Device device_;
  const std::shared_ptr<const NvjpegApi> nvjpeg_;  // with --gpu-decode
  std::unique_ptr<ImageDataset> train_;
  std::unique_ptr<ImageDataset> eval_;
  std::unique_ptr<BatchSource> train_loader_;
  std::unique_ptr<ImageLoader> eval_loader_;
  int64_t max_batches_ = 0;
};

// One fixed random batch on the device, for throughput: every step trains on
// it and evaluation scores it (a trivial figure; the run is unranked).
class SyntheticData final : public Dataset {
 public:
  SyntheticData(const WorkerOptions& o, const torch::Device& device)
      : o_(o),
        shape_(SampleShapeOf(o.config.dataset)),
        batch_(o.config.batch_size, shape_.first, shape_.second,
               *o.args.seed + static_cast<uint64_t>(o.rank), device) {}
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
class EwaData final : public Dataset {
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
    Start(
        *train_,
        ShardIndices(train_size_, *o_.args.seed, epoch, o_.rank, o_.world_size),
        o_.config.batch_size, max_batches);
  }
  std::optional<Batch> NextTrain() override { return Next(); }
  void StartEval() override {
    Start(*eval_, EvalShardIndices(eval_size_, o_.rank, o_.world_size),
          o_.config.batch_size, /*max_batches=*/0);
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

}  // namespace

bool UsesSyntheticData(const ConfigInfo& config) {
  return !config.real_data || config.dataset == "synthetic";
}

std::string GpuDecodeProblem(const WorkerOptions& options) {
  if (!*options.args.gpu_decode) return "";
  const ConfigInfo& c = options.config;
  if (UsesSyntheticData(c)) {
    return "--gpu-decode decodes JPEG files, and config " + c.name +
           " trains on synthetic data";
  }
  if (c.dataset != "imagenet") {
    return "--gpu-decode decodes the JPEG files of an image folder (dataset "
           "imagenet); config " +
           c.name + " reads dataset " + c.dataset + ", which holds none";
  }
  return "";
}

bool IsKnownDataset(std::string_view name) {
  return name == "fashion_mnist" || name == "cifar10" || name == "imagenet" ||
         name == "synthetic" || name == "extreme_weather";
}

namespace {

// The data of `o.config` as its reader yields it: on the CPU, or on
// `device` for synthetic data and --gpu-decode.
std::unique_ptr<Dataset> OpenHostDataset(const WorkerOptions& o,
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
  return std::make_unique<LoadedImageData>(o, std::move(train), std::move(eval),
                                           device);
}

}  // namespace

std::unique_ptr<Dataset> OpenDataset(const WorkerOptions& o,
                                     const torch::Device& device) {
  return std::make_unique<DevicePrefetcher>(OpenHostDataset(o, device), device);
}

}  // namespace hpcai500::worker
