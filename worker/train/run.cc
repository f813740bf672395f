#include "worker/train/run.h"

#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <utility>

#include "common/lease_holder.h"
#include "common/worker_lease.h"
#include "worker/data/open_dataset.h"
#include "worker/distributed/distributed.h"
#include "worker/events/reporter.h"
#include "worker/models/model_zoo.h"
#include "worker/train/cuda_graph_step.h"
#include "worker/train/noop.h"
#include "worker/train/precision.h"
#include "worker/train/step_hooks.h"
#include "worker/train/trainer.h"

namespace hpcai500::worker {

namespace {

constexpr size_t kMaxReasonBytes = 2000;
// How often the lease file is read: a small part of any node timeout.
constexpr std::chrono::milliseconds kLeaseCheckPeriod{500};

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

// The lease ran out: the process ends at once, with its own exit code and
// no run_stop, so that its agent (or the next one, reading its events)
// reports the rank lost rather than failed, and the run gets a new attempt.
[[noreturn]] void FenceSelf(int rank, const std::string& reason) {
  std::fprintf(stderr, "hpcai500-worker rank %d: fenced: %s\n", rank,
               reason.c_str());
  std::fflush(nullptr);
  std::_Exit(kLeaseExpiredExitCode);
}

// The watchdog of the agent's lease (--lease-file), started before anything
// else the rank does, so a rank still loading its data is fenced too.
std::unique_ptr<LeaseWatchdog> WatchLease(const WorkerOptions& options) {
  const std::string path = options.args.lease_file.value_or("");
  Lease lease(path, ReadLeaseFile(path));
  if (!path.empty()) {
    std::fprintf(stderr, "hpcai500-worker rank %d: %s\n", options.rank,
                 lease.Describe().c_str());
  }
  // The agent that started this process names itself: while it is our
  // parent, it fences us itself when it must; once it is gone (we were
  // reparented, perhaps before we got here), the lease decides.
  return std::make_unique<LeaseWatchdog>(
      std::move(lease), kLeaseCheckPeriod, UnixNowMs,
      [rank = options.rank](const std::string& reason) {
        FenceSelf(rank, reason);
      },
      ParentIsHolder(std::getenv(kLeaseHolderEnvVar)));
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
  if (std::string problem = CheckCudaGraph(options); !problem.empty()) {
    return problem;
  }
  // Before the device: a fast path the run cannot take is wrong wherever
  // the worker runs.
  if (std::string problem = GpuDecodeProblem(options); !problem.empty()) {
    return problem;
  }
  return CheckDevice(options);
}

int RunWorker(const WorkerOptions& options, EventLog* log) {
  const std::unique_ptr<LeaseWatchdog> lease = WatchLease(options);
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
      // The test-only hooks (worker/train/step_hooks.h), read once before
      // the run; a value they do not take ends it.
      const std::unique_ptr<StepHooks> hooks = StepHooksFromEnv(ProcessEnv());
      Trainer(options, log, lease.get(), hooks.get()).Run();
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
