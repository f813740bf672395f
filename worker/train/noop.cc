#include "worker/train/noop.h"

#include <torch/torch.h>

#include <stdexcept>
#include <string>

#include "common/event_keys.h"
#include "worker/distributed/distributed.h"
#include "worker/events/reporter.h"
#include "worker/metrics/timing.h"
#include "worker/train/trainer.h"

namespace hpcai500::worker {

namespace {

// The epoch of a noop: one all-reduce of a 1 from every rank; the sum says
// every rank took part.
void AllReduceOne(Collectives& collectives, const torch::Device& device) {
  torch::Tensor one = torch::ones(
      {1}, torch::TensorOptions().dtype(torch::kFloat32).device(device));
  collectives.AllReduceSum(one);
  const double sum = one.item<double>();
  if (sum != collectives.world_size()) {
    throw std::runtime_error("noop all-reduce of 1 over " +
                             std::to_string(collectives.world_size()) +
                             " ranks gave " + std::to_string(sum));
  }
}

}  // namespace

void RunNoop(const WorkerOptions& options, EventLog* log) {
  RunReporter reporter(log);
  const ConfigInfo& c = options.config;
  reporter.Point(event_keys::kInitStart, kJsonNull, EventType::kIntervalStart);
  reporter.Point(event_keys::kSubmissionBenchmark, JsonString(c.workload));
  reporter.Point(
      event_keys::kConfig, JsonString(c.name), EventType::kPointInTime,
      {{"model", JsonString(c.model)}, {"dataset", JsonString(c.dataset)}});
  reporter.Point(event_keys::kUnranked,
                 JsonString("noop: trains nothing (dispatch and health "
                            "checks)"));
  reporter.Point(event_keys::kSeed,
                 JsonInt(static_cast<int64_t>(*options.args.seed)));
  reporter.Point(event_keys::kInitStop, kJsonNull, EventType::kIntervalEnd);

  // The epoch is the rendezvous and one all-reduce, so that its seconds
  // (hpcai500_epoch_stats, the slowest rank's in the run's epoch summary)
  // say how long joining the group took.
  reporter.Point(event_keys::kRunStart, kJsonNull, EventType::kIntervalStart);
  constexpr int kEpoch = 1;
  reporter.EpochStart(kEpoch);
  const double start = MonotonicSeconds();
  const torch::Device device = DeviceOf(options);
  Collectives collectives(options, device);
  AllReduceOne(collectives, device);
  EpochStats stats;
  stats.seconds = MonotonicSeconds() - start;
  reporter.ForwardFlopsPerSample(0);
  reporter.EpochStop(kEpoch, stats);
  reporter.Point(event_keys::kBlockStop, kJsonNull, EventType::kIntervalEnd,
                 {{"first_epoch_num", JsonInt(kEpoch)}});
  reporter.RunSuccess();
}

}  // namespace hpcai500::worker
