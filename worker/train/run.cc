#include "worker/train/run.h"

#include <torch/torch.h>

#include <cstdio>
#include <exception>

#include "worker/data/open_dataset.h"
#include "worker/distributed/distributed.h"
#include "worker/events/reporter.h"
#include "worker/models/model_zoo.h"
#include "worker/train/noop.h"
#include "worker/train/precision.h"
#include "worker/train/trainer.h"

namespace hpcai500::worker {

namespace {

constexpr size_t kMaxReasonBytes = 2000;

std::string Truncate(std::string s) {
  if (s.size() > kMaxReasonBytes) {
    s.resize(kMaxReasonBytes);
    s += "...";
  }
  return s;
}

// The model, dataset and workload of `c` fit together and this worker
// builds them; "" when they do, else the problem.
std::string CheckModelAndData(const ConfigInfo& c) {
  const ModelSpec* model = FindModel(c.model);
  if (model == nullptr) {
    return "config " + c.name + ": model '" + c.model +
           "' is not built by this worker";
  }
  const bool detector = model->family == ModelFamily::kFasterRCNN;
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
  if (!IsKnownDataset(c.dataset)) {
    return "config " + c.name + ": dataset '" + c.dataset +
           "' is not read by this worker";
  }
  if (model->family == ModelFamily::kResNetSmall &&
      c.dataset != "fashion_mnist") {
    return "config " + c.name + ": " + c.model +
           " takes 28x28 Fashion-MNIST images only";
  }
  return "";
}

// The device and precision of `options` exist here; "" when they do.
std::string CheckDevice(const WorkerOptions& options) {
  if (*options.args.device == Device::kCuda) {
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
  if (*options.args.precision == Precision::kFp16 &&
      *options.args.device != Device::kCuda) {
    return "--precision fp16 runs only on --device cuda";
  }
  return "";
}

}  // namespace

std::string CheckRunnable(const WorkerOptions& options) {
  const ConfigInfo& c = options.config;
  if (std::string problem = CheckCommunication(options); !problem.empty()) {
    return problem;
  }
  if (c.workload == kNoopWorkload) return CheckDevice(options);  // no model
  if (std::string problem = CheckModelAndData(c); !problem.empty()) {
    return problem;
  }
  if (c.optimizer != "sgd" && c.optimizer != "lars") {
    return "config " + c.name + ": optimizer '" + c.optimizer +
           "' is not sgd or lars";
  }
  return CheckDevice(options);
}

int RunWorker(const WorkerOptions& options, EventLog* log) {
  std::string reason;
  try {
    torch::set_num_threads(static_cast<int>(*options.args.threads));
    if (!KeepFreedMemoryForReuse()) {
      std::fprintf(stderr,
                   "hpcai500-worker rank %d: malloc kept its own thresholds\n",
                   options.rank);
    }
    if (options.config.workload == kNoopWorkload) {
      RunNoop(options, log);
    } else {
      Trainer(options, log).Run();
    }
    return 0;
  } catch (const c10::Error& e) {
    reason = e.what_without_backtrace();
  } catch (const std::exception& e) {
    reason = e.what();
  } catch (...) {
    reason = "unknown exception";
  }
  ReportAbort(log, options.rank, Truncate(reason));
  return 1;
}

}  // namespace hpcai500::worker
