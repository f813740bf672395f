#include "server/http/run_scaling.h"

#include <algorithm>
#include <tuple>
#include <utility>

#include "absl/strings/str_join.h"
#include "common/run_state.h"
#include "methodology/spec.h"
#include "nlohmann/json.hpp"

namespace hpcai500 {
namespace {

using Json = nlohmann::ordered_json;

// What tells one configuration from another on the scaling page: the fast
// paths on ("fused_bn,cuda_graph") included, so that runs with and without
// them are never averaged together.
using ConfigurationKey =
    std::tuple<std::string, std::string, std::string, std::string, std::string>;

ConfigurationKey KeyOf(const v1::RunSpec& spec) {
  return {spec.config(), spec.precision(), spec.compression(), spec.scaling(),
          absl::StrJoin(FastPathsOn(spec), ",")};
}

int64_t Devices(const v1::RunSpec& spec) {
  return int64_t{spec.nodes()} * spec.ranks_per_node();
}

// The sums one device count of one configuration gathers over its runs.
struct PointSums {
  int32_t nodes = 0;
  int32_t ranks_per_node = 0;
  int runs = 0;
  double valid_flops = 0;
  // Over every (run, epoch, rank) row that measured where its time went.
  int64_t rows = 0;
  double compute = 0, input = 0, comm = 0;
};

void AddTimeSplit(const v1::RunRanksResponse& ranks, PointSums& sums) {
  for (const v1::RankEpoch& row : ranks.epochs()) {
    sums.rows += 1;
    sums.compute += row.compute_seconds();
    sums.input += row.input_wait_seconds();
    sums.comm += row.comm_wait_seconds();
  }
}

Json PointsJson(const std::map<int64_t, PointSums>& by_devices) {
  Json points = Json::array();
  double base = 0;  // Valid FLOPS per device at the fewest devices
  for (const auto& [devices, sums] : by_devices) {
    const double valid_flops = sums.valid_flops / sums.runs;
    if (points.empty()) base = valid_flops / devices;
    // By value: C++17 lets no lambda capture a structured binding (clang
    // refuses it; the fuzz build compiles with clang).
    const int64_t rows = sums.rows;
    const auto per_row = [rows](double total) {
      return rows > 0 ? total / rows : 0.0;
    };
    points.push_back({
        {"devices", devices},
        {"nodes", sums.nodes},
        {"ranks_per_node", sums.ranks_per_node},
        {"runs", sums.runs},
        {"valid_flops", valid_flops},
        {"efficiency", base > 0 ? valid_flops / devices / base : 0.0},
        {"compute_seconds", per_row(sums.compute)},
        {"input_seconds", per_row(sums.input)},
        {"comm_seconds", per_row(sums.comm)},
    });
  }
  return points;
}

// The names of the query come from the user: replace what is not UTF-8
// rather than throw.
std::string Dump(const Json& json) {
  return json.dump(/*indent=*/-1, /*indent_char=*/' ', /*ensure_ascii=*/false,
                   Json::error_handler_t::replace);
}

}  // namespace

bool CountsForScaling(const v1::Run& run, const std::string& system,
                      const std::string& workload, const std::string& sweep) {
  return HasValidResult(run) && run.spec().system() == system &&
         run.spec().workload() == workload &&
         (sweep.empty() || run.spec().sweep() == sweep);
}

std::string RunScalingJson(
    const std::string& system, const std::string& workload,
    const std::string& sweep, const std::vector<v1::Run>& runs,
    const std::map<int64_t, v1::RunRanksResponse>& ranks) {
  std::map<ConfigurationKey, std::map<int64_t, PointSums>> configurations;
  // Sweep id -> its newest run's id, to list the sweeps newest first.
  std::map<std::string, int64_t> sweeps;
  for (const v1::Run& run : runs) {
    if (!CountsForScaling(run, system, workload, /*sweep=*/"")) continue;
    const v1::RunSpec& spec = run.spec();
    if (!spec.sweep().empty()) {
      int64_t& newest = sweeps[spec.sweep()];
      newest = std::max(newest, run.id());
    }
    if (!sweep.empty() && spec.sweep() != sweep) continue;
    PointSums& sums = configurations[KeyOf(spec)][Devices(spec)];
    sums.nodes = spec.nodes();
    sums.ranks_per_node = spec.ranks_per_node();
    sums.runs += 1;
    sums.valid_flops += run.score().valid_flops();
    if (auto it = ranks.find(run.id()); it != ranks.end()) {
      AddTimeSplit(it->second, sums);
    }
  }
  std::vector<std::pair<int64_t, std::string>> newest_first;
  for (const auto& [id, newest] : sweeps) newest_first.emplace_back(newest, id);
  std::sort(newest_first.rbegin(), newest_first.rend());
  Json json = {{"system", system},
               {"workload", workload},
               {"sweep", sweep},
               {"sweeps", Json::array()},
               {"configurations", Json::array()}};
  for (const auto& [newest, id] : newest_first) json["sweeps"].push_back(id);
  for (const auto& [key, by_devices] : configurations) {
    const auto& [config, precision, compression, scaling, fast_paths] = key;
    json["configurations"].push_back({{"config", config},
                                      {"precision", precision},
                                      {"compression", compression},
                                      {"scaling", scaling},
                                      {"fast_paths", fast_paths},
                                      {"points", PointsJson(by_devices)}});
  }
  return Dump(json);
}

std::string SystemsIndexJson(const std::vector<v1::Run>& runs) {
  struct Entry {
    int runs = 0;
    int64_t last_run_id = 0;
    int64_t last_finished_ms = 0;
  };
  std::map<std::pair<std::string, std::string>, Entry> systems;
  for (const v1::Run& run : runs) {
    if (!HasValidResult(run)) continue;
    Entry& entry = systems[{run.spec().system(), run.spec().workload()}];
    entry.runs += 1;
    if (run.id() > entry.last_run_id) {
      entry.last_run_id = run.id();
      entry.last_finished_ms = run.finished_ms();
    }
  }
  Json json = {{"systems", Json::array()}};
  for (const auto& [key, entry] : systems) {
    json["systems"].push_back({{"system", key.first},
                               {"workload", key.second},
                               {"runs", entry.runs},
                               {"last_run_id", entry.last_run_id},
                               {"last_finished_ms", entry.last_finished_ms}});
  }
  return Dump(json);
}

std::string SeriesIndexJson(const std::vector<v1::Run>& runs) {
  struct Entry {
    int runs = 0;
    int scored = 0;
    const v1::Run* last = nullptr;
  };
  std::map<std::string, Entry> series;
  for (const v1::Run& run : runs) {
    Entry& entry = series[run.spec().name()];
    entry.runs += 1;
    if (HasValidResult(run)) entry.scored += 1;
    if (entry.last == nullptr || run.id() > entry.last->id()) {
      entry.last = &run;
    }
  }
  Json json = {{"series", Json::array()}};
  for (const auto& [name, entry] : series) {
    const v1::Run& last = *entry.last;
    json["series"].push_back({{"name", name},
                              {"workload", last.spec().workload()},
                              {"system", last.spec().system()},
                              {"runs", entry.runs},
                              {"scored", entry.scored},
                              {"last_run_id", last.id()},
                              {"last_state", RunStateName(last.state())},
                              {"last_created_ms", last.created_ms()}});
  }
  return Dump(json);
}

}  // namespace hpcai500
