#include "methodology/scoring.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/event_keys.h"
#include "common/status_macros.h"

namespace hpcai500 {
namespace {

// Sums and differences of worker clock readings: a worker's time_ms is any
// int64 (a wild clock, a hostile line), so they saturate instead of
// overflowing.
int64_t SaturatingAdd(int64_t a, int64_t b) {
  int64_t sum = 0;
  if (!__builtin_add_overflow(a, b, &sum)) return sum;
  return a > 0 ? std::numeric_limits<int64_t>::max()
               : std::numeric_limits<int64_t>::min();
}

int64_t SaturatingSub(int64_t a, int64_t b) {
  int64_t difference = 0;
  if (!__builtin_sub_overflow(a, b, &difference)) return difference;
  return b < 0 ? std::numeric_limits<int64_t>::max()
               : std::numeric_limits<int64_t>::min();
}

double NumberOr(const nlohmann::json& object, const char* key,
                double fallback) {
  if (!object.is_object()) return fallback;
  auto it = object.find(key);
  return it != object.end() && it->is_number() ? it->get<double>() : fallback;
}

}  // namespace

double ValidFlops(double flops, double quality, double target, double n) {
  if (target <= 0 || quality <= 0) return 0;
  return flops * std::pow(quality / target, n);
}

namespace {

// One attempt's events and the epochs it keeps, borrowed.
struct Slice {
  const std::vector<EventLine>* events = nullptr;
  int after_epoch = 0;
  int through_epoch = -1;  // < 0: the final attempt, to its run_stop

  bool final() const { return through_epoch < 0; }
  bool Keeps(int epoch) const {
    return epoch > after_epoch && (final() || epoch <= through_epoch);
  }
};

// What one slice adds to a score.
struct SliceTotals {
  const EventLine* accuracy = nullptr;  // rank 0's last, final slice only
  double forward_flops = -1;
  int64_t samples = 0;
  double energy_joules = 0;
  int64_t train_ms = 0;  // kept interval minus its evaluations
  int64_t eval_ms = 0;
  int64_t lost_ms = 0;  // after the kept interval, earlier slices only
};

absl::StatusOr<SliceTotals> TotalSlice(const Slice& slice, size_t index) {
  SliceTotals totals;
  const EventLine* run_start = nullptr;
  int64_t end_ms = -1;  // run_stop, or the checkpoint of through_epoch
  int64_t last_ms = 0;  // rank 0's last event
  std::map<int, int64_t> eval_started;  // epoch -> time_ms, rank 0
  for (const EventLine& e : *slice.events) {
    const bool kept = slice.Keeps(e.epoch());
    if (e.key == event_keys::kEpochStats && kept) {
      totals.samples +=
          static_cast<int64_t>(NumberOr(e.value, event_keys::kStatsSamples, 0));
      totals.energy_joules +=
          NumberOr(e.value, event_keys::kStatsEnergyJoules, 0);
    }
    if (e.rank != 0) continue;
    last_ms = std::max(last_ms, e.time_ms);
    if (e.key == event_keys::kRunStart) {
      run_start = &e;
    } else if (e.key == event_keys::kRunStop && slice.final()) {
      end_ms = e.time_ms;
    } else if (e.key == event_keys::kCheckpoint &&
               e.epoch() == slice.through_epoch) {
      end_ms = e.time_ms;
    } else if (e.key == event_keys::kEvalAccuracy && e.value.is_number() &&
               slice.final()) {
      if (totals.accuracy == nullptr || e.epoch() >= totals.accuracy->epoch())
        totals.accuracy = &e;
    } else if (e.key == event_keys::kForwardFlopsPerSample &&
               e.value.is_number()) {
      totals.forward_flops = e.value.get<double>();
    } else if (e.key == event_keys::kEvalStart && kept) {
      eval_started[e.epoch()] = e.time_ms;
    } else if (e.key == event_keys::kEvalStop && kept) {
      auto it = eval_started.find(e.epoch());
      if (it != eval_started.end()) {
        totals.eval_ms =
            SaturatingAdd(totals.eval_ms, SaturatingSub(e.time_ms, it->second));
        eval_started.erase(it);
      }
    }
  }
  const std::string which =
      index == 0 ? std::string("rank 0")
                 : absl::StrCat("rank 0 of resumed part ", index + 1);
  if (run_start == nullptr || end_ms < 0) {
    if (slice.final()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "cannot score: ", which, " has no run_start/run_stop pair"));
    }
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot score: ", which, " has no run_start or no checkpoint of epoch ",
        slice.through_epoch));
  }
  totals.train_ms =
      SaturatingSub(SaturatingSub(end_ms, run_start->time_ms), totals.eval_ms);
  if (!slice.final()) {
    totals.lost_ms = std::max<int64_t>(0, SaturatingSub(last_ms, end_ms));
  }
  return totals;
}

absl::StatusOr<v1::Score> ScoreSlices(const std::vector<Slice>& slices,
                                      const ConfigInfo& config,
                                      const WorkloadInfo& workload) {
  SliceTotals sum;
  for (size_t i = 0; i < slices.size(); ++i) {
    ASSIGN_OR_RETURN(SliceTotals part, TotalSlice(slices[i], i));
    sum.samples += part.samples;
    sum.energy_joules += part.energy_joules;
    sum.train_ms = SaturatingAdd(sum.train_ms, part.train_ms);
    sum.eval_ms = SaturatingAdd(sum.eval_ms, part.eval_ms);
    sum.lost_ms = SaturatingAdd(sum.lost_ms, part.lost_ms);
    if (part.forward_flops > 0) sum.forward_flops = part.forward_flops;
    if (part.accuracy != nullptr) sum.accuracy = part.accuracy;
  }
  // A noop run trains nothing: no accuracy, no FLOPs and perhaps under a
  // millisecond of "training"; it scores zero against its target of 0.
  const bool noop = workload.name == kNoopWorkload;
  if (sum.accuracy == nullptr && !noop) {
    return absl::FailedPreconditionError(
        "cannot score: rank 0 reported no eval_accuracy");
  }
  if (sum.forward_flops <= 0 && !noop) {
    return absl::FailedPreconditionError(
        "cannot score: no hpcai500_forward_flops_per_sample");
  }
  if (sum.train_ms <= 0 && !noop) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot score: training time is ", sum.train_ms,
                     " ms after evaluation"));
  }
  v1::Score score;
  score.set_quality(sum.accuracy != nullptr ? sum.accuracy->value.get<double>()
                                            : 0.0);
  score.set_target(config.target);
  score.set_exponent(workload.exponent);
  score.set_forward_flops_per_sample(std::max(0.0, sum.forward_flops));
  score.set_samples(sum.samples);
  score.set_train_seconds(std::max<int64_t>(0, sum.train_ms) / 1000.0);
  score.set_eval_seconds(sum.eval_ms / 1000.0);
  score.set_lost_seconds(sum.lost_ms / 1000.0);
  score.set_flops(score.train_seconds() > 0
                      ? 3.0 * score.forward_flops_per_sample() *
                            static_cast<double>(sum.samples) /
                            score.train_seconds()
                      : 0.0);
  score.set_valid_flops(ValidFlops(score.flops(), score.quality(),
                                   score.target(), score.exponent()));
  score.set_reached_target(score.quality() >= score.target());
  score.set_convention(kFlopConvention);
  if (sum.energy_joules > 0 && score.train_seconds() > 0) {
    score.set_energy_joules(sum.energy_joules);
    const double watts = sum.energy_joules / score.train_seconds();
    score.set_valid_flops_per_watt(score.valid_flops() / watts);
  }
  return score;
}

std::vector<Slice> SlicesOf(const std::vector<AttemptEvents>& attempts) {
  std::vector<Slice> slices;
  for (const AttemptEvents& a : attempts) {
    slices.push_back(Slice{&a.events, a.after_epoch, a.through_epoch});
  }
  return slices;
}

}  // namespace

absl::StatusOr<v1::Score> ScoreRun(const std::vector<EventLine>& events,
                                   const ConfigInfo& config,
                                   const WorkloadInfo& workload) {
  return ScoreSlices({Slice{&events, 0, -1}}, config, workload);
}

absl::StatusOr<v1::Score> ScoreAttempts(
    const std::vector<AttemptEvents>& attempts, const ConfigInfo& config,
    const WorkloadInfo& workload) {
  if (attempts.empty()) {
    return absl::FailedPreconditionError("cannot score: no attempt");
  }
  return ScoreSlices(SlicesOf(attempts), config, workload);
}

std::vector<EventLine> KeptEvents(const std::vector<AttemptEvents>& attempts) {
  std::vector<EventLine> kept;
  for (const Slice& slice : SlicesOf(attempts)) {
    for (const EventLine& e : *slice.events) {
      if (slice.Keeps(e.epoch()) || (slice.final() && e.epoch() < 0)) {
        kept.push_back(e);
      }
    }
  }
  return kept;
}

std::vector<v1::EpochSummary> SummarizeEpochs(
    const std::vector<EventLine>& events) {
  std::map<int, v1::EpochSummary> by_epoch;
  std::map<int, double> accuracy;  // rank 0's, by epoch
  for (const EventLine& e : events) {
    const int epoch = e.epoch();
    if (epoch < 0) continue;
    if (e.key == event_keys::kEpochStats) {
      v1::EpochSummary& s = by_epoch[epoch];
      s.set_samples(s.samples() + static_cast<int64_t>(NumberOr(
                                      e.value, event_keys::kStatsSamples, 0)));
      s.set_seconds(std::max(s.seconds(),
                             NumberOr(e.value, event_keys::kStatsSeconds, 0)));
      if (e.rank == 0)
        s.set_train_loss(NumberOr(e.value, event_keys::kStatsTrainLoss, 0));
    } else if (e.key == event_keys::kEvalAccuracy && e.rank == 0 &&
               e.value.is_number()) {
      by_epoch[epoch];
      accuracy[epoch] = e.value.get<double>();
    }
  }
  std::vector<v1::EpochSummary> out;
  for (auto& [epoch, s] : by_epoch) {
    s.set_epoch(epoch);
    auto acc = accuracy.find(epoch);
    s.set_accuracy(acc == accuracy.end() ? -1.0 : acc->second);
    s.set_throughput(s.seconds() > 0 ? s.samples() / s.seconds() : 0);
    out.push_back(s);
  }
  return out;
}

std::vector<v1::RankEpoch> SummarizeRankEpochs(
    const std::vector<EventLine>& events, int32_t attempt) {
  std::map<std::pair<int, int>, v1::RankEpoch> by_epoch_rank;
  for (const EventLine& e : events) {
    const int epoch = e.epoch();
    if (epoch < 0 || e.key != event_keys::kEpochStats) continue;
    v1::RankEpoch row;
    row.set_attempt(attempt);
    row.set_rank(e.rank);
    row.set_epoch(epoch);
    row.set_samples(
        static_cast<int64_t>(NumberOr(e.value, event_keys::kStatsSamples, 0)));
    row.set_seconds(NumberOr(e.value, event_keys::kStatsSeconds, 0));
    row.set_throughput(row.seconds() > 0 ? row.samples() / row.seconds() : 0);
    row.set_train_loss(NumberOr(e.value, event_keys::kStatsTrainLoss, 0));
    row.set_compute_seconds(
        NumberOr(e.value, event_keys::kStatsComputeSeconds, 0));
    row.set_input_wait_seconds(
        NumberOr(e.value, event_keys::kStatsInputWaitSeconds, 0));
    row.set_comm_wait_seconds(
        NumberOr(e.value, event_keys::kStatsCommWaitSeconds, 0));
    row.set_energy_joules(NumberOr(e.value, event_keys::kStatsEnergyJoules, 0));
    by_epoch_rank[{epoch, e.rank}] = std::move(row);
  }
  std::vector<v1::RankEpoch> out;
  out.reserve(by_epoch_rank.size());
  for (auto& [key, row] : by_epoch_rank) out.push_back(std::move(row));
  return out;
}

Aggregate AggregateRepetitions(const std::vector<double>& values) {
  Aggregate agg;
  if (values.empty()) return agg;
  std::vector<double> sorted = values;
  std::sort(sorted.begin(), sorted.end());
  agg.min = sorted.front();
  agg.max = sorted.back();
  auto first = sorted.begin();
  auto last = sorted.end();
  if (sorted.size() >= 3) {
    ++first;
    --last;
  }
  agg.mean = std::accumulate(first, last, 0.0) / std::distance(first, last);
  return agg;
}

double CoefficientOfVariation(const std::vector<double>& values) {
  if (values.size() < 2) return 0;
  double mean = 0;
  for (double v : values) mean += v;
  mean /= static_cast<double>(values.size());
  if (mean == 0) return 0;
  double squares = 0;
  for (double v : values) squares += (v - mean) * (v - mean);
  return std::sqrt(squares / static_cast<double>(values.size() - 1)) /
         std::fabs(mean);
}

}  // namespace hpcai500
