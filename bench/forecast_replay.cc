// Replays recorded runs' quality curves through the coordinator's forecast
// (methodology/forecast.h) as if each evaluation had just arrived, and says how
// often the forecast was right at each epoch and what early abort would have
// saved and lost. bench/forecast.sh records the runs with the real worker.
//
// Usage: hpcai500-forecast-replay WORKLOAD/CONFIG LABEL=EVENTS_FILE...
// Each file is one single-rank run's event lines (the worker's stdout); its
// budget is the epochs it evaluated, its outcome whether its last quality
// reached the config's target. Prints Markdown.
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "common/events.h"
#include "methodology/forecast.h"
#include "methodology/registry.h"
#include "methodology/scoring.h"

namespace hpcai500 {
namespace {

struct Recorded {
  std::string label;
  v1::Run run;  // spec.nodes 1, spec.epochs the budget, its epochs
  bool reached = false;
  // What the coordinator forecast after each evaluation with epochs left,
  // in epoch order.
  std::vector<v1::Forecast> forecasts;
};

// The run recorded in `path`; false when it has no evaluated epoch.
bool Load(const std::string& label, const std::string& path, double target,
          Recorded* out) {
  std::ifstream file(path);
  std::vector<EventLine> events;
  for (std::string line; std::getline(file, line);) {
    absl::StatusOr<EventLine> event = ParseEventLine(line);
    if (event.ok()) events.push_back(*std::move(event));
  }
  out->label = label;
  for (v1::EpochSummary& epoch : SummarizeEpochs(events)) {
    *out->run.add_epochs() = std::move(epoch);
  }
  const std::vector<CurvePoint> curve = QualityCurve(out->run.epochs());
  if (curve.empty()) return false;
  out->run.mutable_spec()->set_nodes(1);
  out->run.mutable_spec()->set_epochs(curve.back().epoch);
  out->reached = curve.back().quality >= target;
  for (size_t k = 1; k < curve.size(); ++k) {
    const std::vector<CurvePoint> seen(curve.begin(), curve.begin() + k);
    absl::StatusOr<v1::Forecast> forecast =
        ForecastQuality(seen, target, curve.back().epoch);
    if (forecast.ok()) out->forecasts.push_back(*std::move(forecast));
  }
  return true;
}

// `run` as the coordinator saw it after epoch `epoch`.
v1::Run Prefix(const v1::Run& run, int epoch) {
  v1::Run prefix = run;
  prefix.clear_epochs();
  for (const v1::EpochSummary& e : run.epochs()) {
    if (e.epoch() <= epoch) *prefix.add_epochs() = e;
  }
  return prefix;
}

int Main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s WORKLOAD/CONFIG LABEL=EVENTS_FILE...\n",
                 argv[0]);
    return 2;
  }
  const std::vector<std::string> name = absl::StrSplit(argv[1], '/');
  const ConfigInfo* config =
      name.size() == 2 ? Registry::Builtin().FindConfig(name[0], name[1])
                       : nullptr;
  if (config == nullptr) {
    std::fprintf(stderr, "unknown config %s\n", argv[1]);
    return 2;
  }
  std::vector<Recorded> runs;
  for (int i = 2; i < argc; ++i) {
    const std::vector<std::string> arg = absl::StrSplit(argv[i], '=');
    Recorded recorded;
    if (arg.size() != 2 || !Load(arg[0], arg[1], config->target, &recorded)) {
      std::fprintf(stderr, "skipping %s: no evaluated epoch\n", argv[i]);
      continue;
    }
    runs.push_back(std::move(recorded));
  }

  std::printf(
      "### Runs (target %g)\n\n| run | curve | reached |\n|---|---|---|\n",
      config->target);
  for (const Recorded& r : runs) {
    std::string curve;
    for (const CurvePoint& p : QualityCurve(r.run.epochs())) {
      absl::StrAppendFormat(&curve, "%s%.3f", curve.empty() ? "" : " ",
                            p.quality);
    }
    std::printf("| %s | %s | %s |\n", r.label.c_str(), curve.c_str(),
                r.reached ? "yes" : "no");
  }

  // Right: P >= 0.5 for a run that reached the target, P < 0.5 for one
  // that did not.
  std::map<int, std::vector<std::pair<double, bool>>> by_epoch;
  for (const Recorded& r : runs) {
    for (const v1::Forecast& f : r.forecasts) {
      by_epoch[f.epoch()].push_back({f.probability(), r.reached});
    }
  }
  std::printf(
      "\n### Forecast right at each epoch (P >= 0.5 said reached)\n\n"
      "| after epoch | runs | right | mean P, reached | mean P, missed |\n"
      "|---:|---:|---:|---:|---:|\n");
  for (const auto& [epoch, seen] : by_epoch) {
    int right = 0, hits = 0, misses = 0;
    double p_hit = 0, p_miss = 0;
    for (const auto& [p, reached] : seen) {
      right += (p >= 0.5) == reached;
      if (reached) {
        p_hit += p;
        ++hits;
      } else {
        p_miss += p;
        ++misses;
      }
    }
    std::printf(
        "| %d | %zu | %d (%.0f%%) | %s | %s |\n", epoch, seen.size(), right,
        100.0 * right / seen.size(),
        hits ? absl::StrFormat("%.2f", p_hit / hits).c_str() : "-",
        misses ? absl::StrFormat("%.2f", p_miss / misses).c_str() : "-");
  }

  std::printf(
      "\n### Early abort\n\n"
      "| min_epochs | abort_if_hopeless | aborted | of them reached (wrong) | "
      "node-hours saved | of all trained | node-hours of wrong aborts |\n"
      "|---:|---:|---:|---:|---:|---:|---:|\n");
  double total = 0;
  for (const Recorded& r : runs) total += NodeHoursLeft(r.run, 0);
  for (const auto& [min_epochs, threshold] :
       std::vector<std::pair<int, double>>{
           {3, 0.05}, {3, 0.2}, {5, 0.05}, {5, 0.2}}) {
    v1::RunSpec spec;
    spec.set_abort_if_hopeless(threshold);
    spec.set_min_epochs(min_epochs);
    int aborted = 0, wrong = 0;
    double saved = 0, lost = 0;
    for (const Recorded& r : runs) {
      for (const v1::Forecast& f : r.forecasts) {
        if (!IsHopeless(spec, f)) continue;
        const double left = NodeHoursLeft(Prefix(r.run, f.epoch()), f.epoch());
        ++aborted;
        saved += left;
        if (r.reached) {
          ++wrong;
          lost += left;
        }
        break;
      }
    }
    std::printf("| %d | %g | %d of %zu | %d | %.5f | %.0f%% | %.5f |\n",
                min_epochs, threshold, aborted, runs.size(), wrong, saved,
                total > 0 ? 100.0 * saved / total : 0.0, lost);
  }
  return 0;
}

}  // namespace
}  // namespace hpcai500

int main(int argc, char** argv) { return hpcai500::Main(argc, argv); }
