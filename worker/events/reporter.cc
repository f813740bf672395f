#include "worker/events/reporter.h"

#include <cstdio>
#include <exception>

#include "common/event_keys.h"

namespace hpcai500::worker {

void RunReporter::Point(std::string_view key, std::string_view value,
                        EventType type, const JsonMembers& metadata,
                        SourceLine where) {
  log_->Emit(type, key, value, metadata, where);
}

void RunReporter::ForwardFlopsPerSample(double flops_per_sample) {
  if (flops_per_sample_written_) return;
  flops_per_sample_written_ = true;
  Point(event_keys::kForwardFlopsPerSample, JsonDouble(flops_per_sample),
        EventType::kPointInTime,
        {{"convention", JsonString("convolutions and matrix products; "
                                   "multiply-add = 2")}});
}

void RunReporter::EpochStart(int epoch) {
  Point(event_keys::kBlockStart, kJsonNull, EventType::kIntervalStart,
        {{"first_epoch_num", JsonInt(epoch)}, {"epoch_count", JsonInt(1)}});
  Point(event_keys::kEpochStart, kJsonNull, EventType::kIntervalStart,
        {{event_keys::kMetaEpochNum, JsonInt(epoch)}});
}

void RunReporter::EpochStop(int epoch, const EpochStats& stats) {
  const JsonMembers epoch_meta = {{event_keys::kMetaEpochNum, JsonInt(epoch)}};
  Point(event_keys::kEpochStop, kJsonNull, EventType::kIntervalEnd, epoch_meta);
  JsonMembers measured = {
      {event_keys::kStatsSamples, JsonInt(stats.samples)},
      {event_keys::kStatsSeconds, JsonDouble(stats.seconds)},
      {"throughput",
       JsonDouble(stats.seconds > 0 ? stats.samples / stats.seconds : 0.0)},
      {event_keys::kStatsTrainLoss, JsonDouble(stats.mean_loss)},
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
    measured.emplace_back(event_keys::kStatsEnergyJoules,
                          JsonDouble(*stats.energy_joules));
    measured.emplace_back("energy_source", JsonString(stats.energy_source));
  }
  Point(event_keys::kEpochStats, JsonObject(measured), EventType::kPointInTime,
        epoch_meta);
}

void RunReporter::EvalStart(int epoch) {
  Point(event_keys::kEvalStart, kJsonNull, EventType::kIntervalStart,
        {{event_keys::kMetaEpochNum, JsonInt(epoch)}});
}

void RunReporter::EvalStop(int epoch, double eval_seconds,
                           const EvalResult& result) {
  const JsonMembers epoch_meta = {{event_keys::kMetaEpochNum, JsonInt(epoch)}};
  JsonMembers eval_meta = epoch_meta;
  eval_meta.emplace_back("eval_seconds", JsonDouble(eval_seconds));
  Point(event_keys::kEvalStop, kJsonNull, EventType::kIntervalEnd, eval_meta);
  Point(event_keys::kEvalAccuracy, JsonDouble(result.quality),
        EventType::kPointInTime, epoch_meta);
  if (result.top5) {
    Point(event_keys::kEvalTop5, JsonDouble(*result.top5),
          EventType::kPointInTime, epoch_meta);
  } else {
    JsonMembers ap;
    for (const auto& [name, value] : result.class_ap) {
      ap.emplace_back(name, JsonDouble(value));
    }
    Point(event_keys::kEvalAp50, JsonObject(ap), EventType::kPointInTime,
          epoch_meta);
  }
  Point(event_keys::kBlockStop, kJsonNull, EventType::kIntervalEnd,
        {{"first_epoch_num", JsonInt(epoch)}});
}

void RunReporter::Checkpoint(const std::string& path, int epoch) {
  Point(event_keys::kCheckpoint, JsonString(path), EventType::kPointInTime,
        {{event_keys::kMetaEpochNum, JsonInt(epoch)}});
}

void RunReporter::RunSuccess() {
  Point(event_keys::kRunStop, kJsonNull, EventType::kIntervalEnd,
        {{event_keys::kMetaStatus, JsonString(event_keys::kStatusSuccess)}});
}

void ReportAbort(EventLog* log, int rank, const std::string& reason,
                 SourceLine where) {
  std::fprintf(stderr, "hpcai500-worker rank %d: aborted: %s\n", rank,
               reason.c_str());
  try {
    log->Emit(
        EventType::kIntervalEnd, event_keys::kRunStop, kJsonNull,
        {{event_keys::kMetaStatus, JsonString(event_keys::kStatusAborted)},
         {event_keys::kMetaReason, JsonString(reason)}},
        where);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hpcai500-worker rank %d: cannot write run_stop: %s\n",
                 rank, e.what());
  }
}

}  // namespace hpcai500::worker
