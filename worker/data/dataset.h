// The one interface the trainer reads data through, whatever the data set:
// Fashion-MNIST, CIFAR-10, an ImageNet folder tree, Extreme Weather, or
// synthetic tensors. OpenDataset (worker/data/open_dataset.h) picks the
// implementation; each rank reads its shard (worker/data/sharding.h).
//
// Thread-compatible: one thread (the trainer's) uses a Dataset; an
// implementation may read ahead on threads of its own.
#ifndef HPCAI500_WORKER_DATA_DATASET_H_
#define HPCAI500_WORKER_DATA_DATASET_H_

#include <torch/torch.h>

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "worker/data/resample.h"
#include "worker/models/faster_rcnn.h"

namespace hpcai500::worker {

// A batch of either workload: images with class labels (classification) or
// with one target per image (detection). Images are uint8 pixels that
// `normalization` turns into the model's input (decoded images), or float
// input already (Fashion-MNIST, Extreme Weather, synthetic data); ImagesOn
// (worker/data/device_input.h) is the one conversion, on the device.
struct Batch {
  torch::Tensor images;                  // uint8 or float [B, C, H, W]
  torch::Tensor labels;                  // classification: int64 [B]
  std::vector<DetectionTarget> targets;  // detection: x1 y1 x2 y2 boxes
  std::optional<Normalization> normalization = std::nullopt;  // uint8 images
  // Classification: rows labelled kIgnoredLabel (worker/train/task.h) are
  // padding that the loss masks (a --cuda-graph step's static batch).
  bool masked = false;
  int64_t size() const { return images.size(0); }
};

// One rank's training batches and its share of the evaluation set.
class Dataset {
 public:
  virtual ~Dataset() = default;
  // Samples of one epoch across all ranks, and of the evaluation set.
  virtual int64_t train_size() const = 0;
  virtual int64_t eval_size() const = 0;
  // {C, H, W} of every sample, and the number of classes.
  virtual std::array<int64_t, 3> sample_shape() const = 0;
  virtual int64_t num_classes() const = 0;
  // Starts `epoch` (1-based) of at most `max_batches` batches.
  virtual void StartEpoch(int epoch, int64_t max_batches) = 0;
  // The next batch of this rank's shard; nullopt once it is exhausted. On
  // the CPU or, behind OpenDataset's DevicePrefetcher, on the run's device.
  virtual std::optional<Batch> NextTrain() = 0;
  // Starts a pass over this rank's shard of the evaluation set.
  virtual void StartEval() = 0;
  // The next evaluation batch; nullopt once the shard is exhausted.
  virtual std::optional<Batch> NextEval() = 0;
  // Distinct samples that could not be decoded so far (skipped).
  virtual int64_t corrupt_samples() const { return 0; }
};

}  // namespace hpcai500::worker

#endif  // HPCAI500_WORKER_DATA_DATASET_H_
