#include "server/http/run_history.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "nlohmann/json.hpp"

namespace hpcai500 {
namespace {

// The metrics the history page draws, in its order.
const std::vector<RegressMetric>& HistoryMetrics() {
  static const auto* const kMetrics = new std::vector<RegressMetric>{
      RegressMetric::kValidFlops, RegressMetric::kThroughput,
      RegressMetric::kQuality};
  return *kMetrics;
}

}  // namespace

std::string RunHistoryJson(const std::string& name,
                           const std::vector<v1::Run>& runs) {
  std::vector<const v1::Run*> scored;
  for (const v1::Run& run : runs) {
    if (run.has_score() && run.invalidated_by().empty()) {
      scored.push_back(&run);
    }
  }
  std::sort(
      scored.begin(), scored.end(),
      [](const v1::Run* a, const v1::Run* b) { return a->id() < b->id(); });

  const BandOptions options;
  nlohmann::ordered_json json = {
      {"name", name},
      {"band",
       {{"window", kDefaultRegressWindow},
        {"min_history", options.min_history},
        {"threshold", options.threshold},
        {"min_band_pct", options.min_band_pct}}},
      {"runs", nlohmann::ordered_json::array()},
  };
  for (const v1::Run* run : scored) {
    nlohmann::ordered_json entry = {
        {"id", run->id()},
        {"finished_ms", run->finished_ms()},
        {"metrics", nlohmann::ordered_json::object()}};
    json["runs"].push_back(std::move(entry));
  }
  for (RegressMetric metric : HistoryMetrics()) {
    std::vector<double> values;
    values.reserve(scored.size());
    for (const v1::Run* run : scored) {
      // Every metric the page draws has a value in a scored run.
      values.push_back(RegressMetricValue(*run, metric).value_or(0));
    }
    const std::vector<HistoryPoint> points =
        BandsOverHistory(values, metric, kDefaultRegressWindow, options);
    for (size_t i = 0; i < points.size(); ++i) {
      const std::optional<ToleranceBand>& band = points[i].band;
      json["runs"][i]["metrics"][RegressMetricName(metric)] = {
          {"value", values[i]},
          {"low", band ? nlohmann::ordered_json(band->low()) : nullptr},
          {"high", band ? nlohmann::ordered_json(band->high()) : nullptr},
          {"regression", points[i].regression},
      };
    }
  }
  // The name comes from the query: replace what is not UTF-8 rather than
  // throw.
  return json.dump(/*indent=*/-1, /*indent_char=*/' ', /*ensure_ascii=*/false,
                   nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace hpcai500
