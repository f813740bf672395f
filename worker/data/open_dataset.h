// OpenDataset: the data set of a run's config behind the Dataset interface
// (worker/data/dataset.h): Fashion-MNIST in memory, CIFAR-10 or an ImageNet
// folder tree decoded by ImageLoader threads, Extreme Weather read ahead on a
// helper thread (its missing year files generated first when the config asks
// for generated data), or one fixed synthetic batch.
//
// Thread-safety: OpenDataset may run on any thread; the Dataset it returns
// is used by one thread.
#ifndef HPCAI500_WORKER_DATA_OPEN_DATASET_H_
#define HPCAI500_WORKER_DATA_OPEN_DATASET_H_

#include <torch/torch.h>

#include <memory>
#include <string>
#include <string_view>

#include "methodology/registry.h"
#include "worker/data/dataset.h"
#include "worker/flags.h"

namespace hpcai500::worker {

// Whether the run trains on random tensors (never ranked).
bool UsesSyntheticData(const ConfigInfo& config);

// Why --gpu-decode cannot decode the data of `options`' run (it decodes the
// JPEG files of an image folder: synthetic data and the other data sets have
// none); "" when it can or the flag is off.
std::string GpuDecodeProblem(const WorkerOptions& options);

// Whether this worker reads dataset `name`.
bool IsKnownDataset(std::string_view name);

// Opens the data of `options.config` for rank `options.rank` of
// `options.world_size`. Its batches come out on `device`, each copied there
// while the one before it is in use (DevicePrefetcher,
// worker/data/device_input.h); decoded images stay uint8 until ImagesOn.
// `options` is borrowed for the Dataset's lifetime. Throws std::runtime_error
// naming the data folder when it does not exist, and the readers' errors.
std::unique_ptr<Dataset> OpenDataset(const WorkerOptions& options,
                                     const torch::Device& device);

}  // namespace hpcai500::worker

#endif  // HPCAI500_WORKER_DATA_OPEN_DATASET_H_
