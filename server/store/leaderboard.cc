#include "server/store/leaderboard.h"

#include <algorithm>
#include <limits>
#include <map>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/run_state.h"
#include "common/vocabulary.h"
#include "methodology/convergence.h"
#include "methodology/global_batch.h"
#include "methodology/regress_band.h"
#include "methodology/scoring.h"
#include "methodology/spec.h"

namespace hpcai500 {
namespace {

bool ConfigKnown(const v1::LeaderboardRequest& request,
                 const Registry& registry) {
  for (const ConfigInfo& config : registry.configs()) {
    if (config.name == request.config() &&
        (request.workload().empty() || config.workload == request.workload())) {
      return true;
    }
  }
  return false;
}

// The inventory of the node that hosted rank 0 in the run's last attempt,
// or null when none was kept.
const v1::Inventory* RankZeroInventory(const v1::Run& run) {
  if (run.attempts().empty()) return nullptr;
  const v1::Attempt& attempt = *run.attempts().rbegin();
  if (attempt.nodes().empty()) return nullptr;
  auto it = attempt.inventory().find(attempt.nodes(0));
  return it == attempt.inventory().end() ? nullptr : &it->second;
}

// A sort key's value of a row: numbers compare as numbers, text as text.
struct SortValue {
  double number = 0;
  std::string text;
  bool operator<(const SortValue& other) const {
    return number != other.number ? number < other.number : text < other.text;
  }
};

// The value of `row` under `key` (one of kLeaderboardSortKeys).
SortValue SortValueOf(const v1::LeaderboardRow& row, absl::string_view key) {
  if (key == "rank") {
    // SortLeaderboardRows puts unranked rows (rank 0) last itself.
    return {static_cast<double>(row.rank()), ""};
  }
  if (key == "system") return {0, row.system()};
  if (key == "name") return {0, row.name()};
  if (key == "level") return {0, row.level()};
  if (key == "devices") {
    return {static_cast<double>(row.nodes()) * row.ranks_per_node(),
            row.device_model()};
  }
  if (key == "device_model") return {0, row.device_model()};
  if (key == "valid_flops") return {row.valid_flops(), ""};
  if (key == "valid_flops_per_watt") return {row.valid_flops_per_watt(), ""};
  if (key == "flops") return {row.flops(), ""};
  if (key == "quality") {
    return {row.target() > 0 ? row.quality() / row.target() : row.quality(),
            ""};
  }
  if (key == "train_seconds") return {row.train_seconds(), ""};
  if (key == "precision") {
    return {0, absl::StrCat(row.precision(), " ", row.compression())};
  }
  if (key == "compression") return {0, row.compression()};
  if (key == "versions") {
    std::map<std::string, std::string> sorted(row.versions().begin(),
                                              row.versions().end());
    return {0, absl::StrJoin(sorted, ",", absl::PairFormatter("="))};
  }
  if (key == "user") return {0, row.user()};
  return {static_cast<double>(row.finished_ms()), ""};  // "date"
}

// Whether a submission's runs are all there and all succeeded with a score
// that no admin invalidated (one invalidated repetition takes the whole
// submission off: its aggregate would no longer be what was run).
bool Complete(const std::vector<const v1::Run*>& members) {
  const bool all_scored =
      std::all_of(members.begin(), members.end(),
                  [](const v1::Run* run) { return HasValidResult(*run); });
  return all_scored && static_cast<int>(members.size()) >=
                           std::max(1, members.front()->spec().repetitions());
}

// Repeatability and convergence of the submission `sorted` (by id) on
// `row`; the check's factor divides the row's Valid FLOPS.
void JudgeRepetitions(const std::vector<const v1::Run*>& sorted,
                      const Registry& registry, v1::LeaderboardRow& row) {
  std::vector<double> throughput, reached;
  std::vector<std::optional<double>> epochs;
  const int64_t global_batch = GlobalBatch(sorted.front()->spec(), registry);
  for (const v1::Run* run : sorted) {
    throughput.push_back(
        RegressMetricValue(*run, RegressMetric::kThroughput).value_or(0));
    epochs.push_back(EpochsToTarget(*run));
    if (epochs.back().has_value()) reached.push_back(*epochs.back());
  }
  row.set_throughput_cv(CoefficientOfVariation(throughput));
  row.set_epochs_to_target_cv(CoefficientOfVariation(reached));
  const v1::RunSpec& spec = sorted.front()->spec();
  const ConvergenceResult check =
      CheckConvergence(epochs, global_batch,
                       registry.References(spec.workload(), spec.config()));
  row.set_epochs_to_target(
      check.mean_epochs > 0
          ? check.mean_epochs
          : (reached.empty() ? 0 : AggregateRepetitions(reached).mean));
  v1::ConvergenceCheck& out = *row.mutable_convergence();
  out.set_verdict(ConvergenceVerdictName(check.verdict));
  out.set_global_batch(global_batch);
  out.set_factor(check.factor);
  if (check.reference.has_value()) {
    out.set_reference_epochs(check.reference->mean);
    out.set_min_epochs(check.reference->min_epochs);
    out.set_reference(check.reference->source);
  }
  row.set_valid_flops_unnormalized(row.valid_flops());
  row.set_valid_flops(row.valid_flops() / check.factor);
  row.set_valid_flops_min(row.valid_flops_min() / check.factor);
  row.set_valid_flops_max(row.valid_flops_max() / check.factor);
}

}  // namespace

std::optional<v1::LeaderboardRow> SubmissionRow(
    const std::vector<const v1::Run*>& members, const Registry& registry) {
  if (members.empty() || !Complete(members) ||
      members.front()->spec().workload() == kNoopWorkload) {
    return std::nullopt;
  }
  std::vector<const v1::Run*> sorted = members;
  std::sort(
      sorted.begin(), sorted.end(),
      [](const v1::Run* a, const v1::Run* b) { return a->id() < b->id(); });
  const v1::RunSpec& spec = sorted.front()->spec();
  std::vector<double> vflops, flops, quality;
  v1::LeaderboardRow row;
  row.set_ranked(true);
  std::vector<double> per_watt, train_seconds;
  for (const v1::Run* run : sorted) {
    vflops.push_back(run->score().valid_flops());
    flops.push_back(run->score().flops());
    quality.push_back(run->score().quality());
    per_watt.push_back(run->score().valid_flops_per_watt());
    train_seconds.push_back(run->score().train_seconds());
    row.add_run_ids(run->id());
    row.set_finished_ms(std::max(row.finished_ms(), run->finished_ms()));
    if (!run->spec().ranked()) row.set_ranked(false);
  }
  const Aggregate valid = AggregateRepetitions(vflops);
  row.set_submission_id(sorted.front()->submission_id());
  row.set_name(spec.name());
  row.set_system(spec.system());
  row.set_workload(spec.workload());
  row.set_config(spec.config());
  row.set_level(spec.level());
  row.set_valid_flops(valid.mean);
  row.set_valid_flops_min(valid.min);
  row.set_valid_flops_max(valid.max);
  row.set_flops(AggregateRepetitions(flops).mean);
  row.set_quality(AggregateRepetitions(quality).mean);
  row.set_target(sorted.front()->score().target());
  row.set_runs(static_cast<int32_t>(sorted.size()));
  row.set_nodes(spec.nodes());
  row.set_ranks_per_node(spec.ranks_per_node());
  row.set_device(spec.device());
  row.set_precision(spec.precision());
  row.set_compression(spec.compression());
  for (std::string& path : FastPathsOn(spec)) {
    row.add_fast_paths(std::move(path));
  }
  row.set_user(sorted.front()->user());
  // Per watt only when every run measured energy: a mean over runs with
  // and without a counter would mean nothing.
  if (std::all_of(per_watt.begin(), per_watt.end(),
                  [](double w) { return w > 0; })) {
    row.set_valid_flops_per_watt(AggregateRepetitions(per_watt).mean);
  }
  row.set_train_seconds(AggregateRepetitions(train_seconds).mean);
  if (const v1::Inventory* inventory = RankZeroInventory(*sorted.front())) {
    row.set_device_model(inventory->devices().empty()
                             ? inventory->cpu_model()
                             : inventory->devices(0).model());
    *row.mutable_versions() = inventory->versions();
  }
  JudgeRepetitions(sorted, registry, row);
  return row;
}

std::string LeaderboardRulesDigest() {
  // Bump when SubmissionRow computes a row differently: every stored row is
  // then written again by the next hpcai500d to open the file.
  constexpr int kRowFormat = 2;  // 2: spread and convergence check
  // FNV-1a, 64 bits: stable across builds (std::hash need not be).
  uint64_t hash = 14695981039346656037ull;
  const std::string_view registry = Registry::BuiltinText();
  const std::string rules = absl::StrCat(
      kRowFormat, "\n", absl::string_view(registry.data(), registry.size()));
  for (const char c : rules) {
    hash = (hash ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  }
  return absl::StrCat(kRowFormat, ":", absl::Hex(hash, absl::kZeroPad16));
}

void MarkSpread(const SpreadLimits& limits, v1::LeaderboardResponse& response) {
  response.set_throughput_cv_limit(limits.throughput_cv);
  response.set_epochs_to_target_cv_limit(limits.epochs_to_target_cv);
  for (v1::LeaderboardRow& row : *response.mutable_rows()) {
    row.set_unrepeatable(row.throughput_cv() > limits.throughput_cv ||
                         row.epochs_to_target_cv() >
                             limits.epochs_to_target_cv);
  }
}

absl::Status ValidateLeaderboardRequest(const v1::LeaderboardRequest& request,
                                        const Registry& registry) {
  if (!request.workload().empty() &&
      registry.FindWorkload(request.workload()) == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown workload '", request.workload(), "'"));
  }
  if (!request.config().empty() && !ConfigKnown(request, registry)) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown config '", request.config(), "'"));
  }
  if (request.limit() < 0 || request.limit() > kMaxLeaderboardLimit) {
    return absl::InvalidArgumentError(
        absl::StrCat("leaderboard: 'limit' must be between 0 (every row) and ",
                     kMaxLeaderboardLimit, ", got ", request.limit()));
  }
  if (request.offset() < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "leaderboard: 'offset' must not be negative, got ", request.offset()));
  }
  if (!request.level().empty() &&
      std::find(std::begin(kLevels), std::end(kLevels), request.level()) ==
          std::end(kLevels)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "leaderboard: 'level' must be one of ", absl::StrJoin(kLevels, ", "),
        ", got '", request.level(), "'"));
  }
  if (!request.ranked().empty() && request.ranked() != kRankedFilter &&
      request.ranked() != kUnrankedFilter) {
    return absl::InvalidArgumentError(
        absl::StrCat("leaderboard: 'ranked' must be ", kRankedFilter, " or ",
                     kUnrankedFilter, ", got '", request.ranked(), "'"));
  }
  if (!request.sort().empty() &&
      std::find(kLeaderboardSortKeys.begin(), kLeaderboardSortKeys.end(),
                request.sort()) == kLeaderboardSortKeys.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("leaderboard: 'sort' must be one of ",
                     absl::StrJoin(kLeaderboardSortKeys, ", "), ", got '",
                     request.sort(), "'"));
  }
  return absl::OkStatus();
}

void SortLeaderboardRows(
    google::protobuf::RepeatedPtrField<v1::LeaderboardRow>& rows,
    absl::string_view key, bool ascending) {
  if (key.empty()) return;
  const bool by_rank = key == "rank";
  std::stable_sort(
      rows.begin(), rows.end(),
      [&](const v1::LeaderboardRow& a, const v1::LeaderboardRow& b) {
        if (by_rank && (a.rank() == 0) != (b.rank() == 0)) {
          return b.rank() == 0;  // unranked last either way
        }
        const SortValue va = SortValueOf(a, key);
        const SortValue vb = SortValueOf(b, key);
        return ascending ? va < vb : vb < va;
      });
}

void PageLeaderboard(const v1::LeaderboardRequest& request,
                     v1::LeaderboardResponse& response) {
  auto& rows = *response.mutable_rows();
  const int size = rows.size();
  const int from = std::min(request.offset(), size);
  const int to = request.limit() > 0
                     ? static_cast<int>(std::min<int64_t>(
                           int64_t{from} + request.limit(), size))
                     : size;
  rows.DeleteSubrange(to, size - to);
  rows.DeleteSubrange(0, from);
}

}  // namespace hpcai500
