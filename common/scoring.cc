#include "common/scoring.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/event_keys.h"

namespace hpcai500 {
namespace {

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

absl::StatusOr<v1::Score> ScoreRun(const std::vector<EventLine>& events,
                                   const ConfigInfo& config,
                                   const WorkloadInfo& workload) {
  const EventLine* run_start = nullptr;
  const EventLine* run_stop = nullptr;
  const EventLine* accuracy = nullptr;
  double forward_flops = -1;
  int64_t samples = 0;
  double energy_joules = 0;
  int64_t eval_ms = 0;
  std::map<int, int64_t> eval_started;  // epoch -> time_ms, rank 0
  for (const EventLine& e : events) {
    if (e.key == event_keys::kEpochStats) {
      samples +=
          static_cast<int64_t>(NumberOr(e.value, event_keys::kStatsSamples, 0));
      energy_joules += NumberOr(e.value, event_keys::kStatsEnergyJoules, 0);
    }
    if (e.rank != 0) continue;
    if (e.key == event_keys::kRunStart) {
      run_start = &e;
    } else if (e.key == event_keys::kRunStop) {
      run_stop = &e;
    } else if (e.key == event_keys::kEvalAccuracy && e.value.is_number()) {
      if (accuracy == nullptr || e.epoch() >= accuracy->epoch()) accuracy = &e;
    } else if (e.key == event_keys::kForwardFlopsPerSample &&
               e.value.is_number()) {
      forward_flops = e.value.get<double>();
    } else if (e.key == event_keys::kEvalStart) {
      eval_started[e.epoch()] = e.time_ms;
    } else if (e.key == event_keys::kEvalStop) {
      auto it = eval_started.find(e.epoch());
      if (it != eval_started.end()) {
        eval_ms += e.time_ms - it->second;
        eval_started.erase(it);
      }
    }
  }
  if (run_start == nullptr || run_stop == nullptr) {
    return absl::FailedPreconditionError(
        "cannot score: rank 0 has no run_start/run_stop pair");
  }
  if (accuracy == nullptr) {
    return absl::FailedPreconditionError(
        "cannot score: rank 0 reported no eval_accuracy");
  }
  if (forward_flops <= 0) {
    return absl::FailedPreconditionError(
        "cannot score: no hpcai500_forward_flops_per_sample");
  }
  const int64_t train_ms = run_stop->time_ms - run_start->time_ms - eval_ms;
  if (train_ms <= 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot score: training time is ", train_ms, " ms after evaluation"));
  }
  v1::Score score;
  score.set_quality(accuracy->value.get<double>());
  score.set_target(config.target);
  score.set_exponent(workload.exponent);
  score.set_forward_flops_per_sample(forward_flops);
  score.set_samples(samples);
  score.set_train_seconds(train_ms / 1000.0);
  score.set_eval_seconds(eval_ms / 1000.0);
  score.set_flops(3.0 * forward_flops * static_cast<double>(samples) /
                  score.train_seconds());
  score.set_valid_flops(ValidFlops(score.flops(), score.quality(),
                                   score.target(), score.exponent()));
  score.set_reached_target(score.quality() >= score.target());
  score.set_convention(kFlopConvention);
  if (energy_joules > 0) {
    score.set_energy_joules(energy_joules);
    const double watts = energy_joules / score.train_seconds();
    score.set_valid_flops_per_watt(score.valid_flops() / watts);
  }
  return score;
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

}  // namespace hpcai500
