#include "worker/events/reporter.h"

#include <cstdio>
#include <exception>

namespace hpcai500::worker {

void RunReporter::Point(std::string_view key, std::string_view value,
                        EventType type, const JsonMembers& metadata) {
  log_->Emit(type, key, value, metadata);
}

void RunReporter::ForwardFlopsPerSample(double flops_per_sample) {
  if (flops_per_sample_written_) return;
  flops_per_sample_written_ = true;
  Point("hpcai500_forward_flops_per_sample", JsonDouble(flops_per_sample),
        EventType::kPointInTime,
        {{"convention", JsonString("convolutions and matrix products; "
                                   "multiply-add = 2")}});
}

void RunReporter::EpochStart(int epoch) {
  Point("block_start", kJsonNull, EventType::kIntervalStart,
        {{"first_epoch_num", JsonInt(epoch)}, {"epoch_count", JsonInt(1)}});
  Point("epoch_start", kJsonNull, EventType::kIntervalStart,
        {{"epoch_num", JsonInt(epoch)}});
}

void RunReporter::EpochStop(int epoch, const EpochStats& stats) {
  const JsonMembers epoch_meta = {{"epoch_num", JsonInt(epoch)}};
  Point("epoch_stop", kJsonNull, EventType::kIntervalEnd, epoch_meta);
  JsonMembers measured = {
      {"samples", JsonInt(stats.samples)},
      {"seconds", JsonDouble(stats.seconds)},
      {"throughput",
       JsonDouble(stats.seconds > 0 ? stats.samples / stats.seconds : 0.0)},
      {"train_loss", JsonDouble(stats.mean_loss)},
      {"comm_bytes", JsonInt(stats.comm_bytes)},
      {"comm_wait_seconds", JsonDouble(stats.comm_wait_seconds)},
      {"forward_flops", JsonDouble(stats.forward_flops)},
      {"other_ops", JsonInt(stats.other_ops)},
      {"compute_seconds", JsonDouble(stats.compute_seconds)},
      {"input_wait_seconds", JsonDouble(stats.input_wait_seconds)},
      {"skipped_steps", JsonInt(stats.skipped_steps)},
      {"loss_scale", JsonDouble(stats.loss_scale)},
      {"corrupt_samples", JsonInt(stats.corrupt_samples)}};
  if (stats.energy_joules) {
    measured.emplace_back("energy_joules", JsonDouble(*stats.energy_joules));
    measured.emplace_back("energy_source", JsonString(stats.energy_source));
  }
  Point("hpcai500_epoch_stats", JsonObject(measured), EventType::kPointInTime,
        epoch_meta);
}

void RunReporter::EvalStart(int epoch) {
  Point("eval_start", kJsonNull, EventType::kIntervalStart,
        {{"epoch_num", JsonInt(epoch)}});
}

void RunReporter::EvalStop(int epoch, double eval_seconds,
                           const EvalResult& result) {
  const JsonMembers epoch_meta = {{"epoch_num", JsonInt(epoch)}};
  JsonMembers eval_meta = epoch_meta;
  eval_meta.emplace_back("eval_seconds", JsonDouble(eval_seconds));
  Point("eval_stop", kJsonNull, EventType::kIntervalEnd, eval_meta);
  Point("eval_accuracy", JsonDouble(result.quality), EventType::kPointInTime,
        epoch_meta);
  if (result.top5) {
    Point("eval_top5", JsonDouble(*result.top5), EventType::kPointInTime,
          epoch_meta);
  } else {
    JsonMembers ap;
    for (const auto& [name, value] : result.class_ap) {
      ap.emplace_back(name, JsonDouble(value));
    }
    Point("hpcai500_eval_ap50", JsonObject(ap), EventType::kPointInTime,
          epoch_meta);
  }
  Point("block_stop", kJsonNull, EventType::kIntervalEnd,
        {{"first_epoch_num", JsonInt(epoch)}});
}

void RunReporter::Checkpoint(const std::string& path, int epoch) {
  Point("hpcai500_checkpoint", JsonString(path), EventType::kPointInTime,
        {{"epoch_num", JsonInt(epoch)}});
}

void RunReporter::RunSuccess() {
  Point("run_stop", kJsonNull, EventType::kIntervalEnd,
        {{"status", JsonString("success")}});
}

void ReportAbort(EventLog* log, int rank, const std::string& reason) {
  std::fprintf(stderr, "hpcai500-worker rank %d: aborted: %s\n", rank,
               reason.c_str());
  try {
    log->Emit(
        EventType::kIntervalEnd, "run_stop", kJsonNull,
        {{"status", JsonString("aborted")}, {"reason", JsonString(reason)}});
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hpcai500-worker rank %d: cannot write run_stop: %s\n",
                 rank, e.what());
  }
}

}  // namespace hpcai500::worker
