// The leaderboard (docs/design.md "Repeatability"): one row per submission
// whose every run succeeded with a score, its Valid FLOPS aggregated over the
// repetitions, grouped by (workload, config) and ranked within each group,
// ranked rows first, best Valid FLOPS first. Pure logic over stored runs: no
// store, no lock. Store keeps one SubmissionRow per listed submission in its
// leaderboard table, updated as runs are scored or invalidated, and pages
// through it (the tests build the same board from every run as the
// reference the store's must equal).
//
// Thread-safe: free functions.
#ifndef HPCAI500_SERVER_STORE_LEADERBOARD_H_
#define HPCAI500_SERVER_STORE_LEADERBOARD_H_

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "methodology/registry.h"
#include "methodology/scoring.h"
#include "proto/hpcai500.pb.h"

namespace hpcai500 {

// The most rows one leaderboard request may ask for.
inline constexpr int kMaxLeaderboardLimit = 10'000;

// LeaderboardRequest.ranked's values.
inline constexpr char kRankedFilter[] = "ranked";
inline constexpr char kUnrankedFilter[] = "unranked";

// The columns a leaderboard may be sorted by (LeaderboardRequest.sort):
// the page's column keys. "devices" is nodes x ranks per node, then the
// device model; "quality" is quality / target; "precision" is precision
// then compression; "date" is when the last run finished.
inline constexpr std::array<absl::string_view, 16> kLeaderboardSortKeys = {
    "rank",        "system",       "name",          "level",
    "devices",     "device_model", "valid_flops",   "valid_flops_per_watt",
    "flops",       "quality",      "train_seconds", "precision",
    "compression", "versions",     "user",          "date"};

// OK when the request's workload and config filters name what `registry`
// knows (an empty filter matches all), its level is a level, its ranked
// filter kRankedFilter or kUnrankedFilter, its sort one of
// kLeaderboardSortKeys (each may be empty) and its page is sane (limit 0 to
// kMaxLeaderboardLimit, offset not negative); InvalidArgument naming the
// field otherwise.
absl::Status ValidateLeaderboardRequest(const v1::LeaderboardRequest& request,
                                        const Registry& registry);

// The row of one submission from all its runs (`members`, any order, at
// least one), rank unset; nullopt while it is not listed: a submission is
// listed once it has all its repetitions and every one succeeded with a
// score that no admin invalidated. A noop submission (kNoopWorkload) is
// never listed: it measures dispatch, not a benchmark. The row carries the
// repetitions' spread (throughput and epochs-to-target CV) and the
// convergence check against `registry`'s reference points for the config
// (methodology/convergence.h), whose factor divides its Valid FLOPS.
std::optional<v1::LeaderboardRow> SubmissionRow(
    const std::vector<const v1::Run*>& members,
    const Registry& registry = Registry::Builtin());

// The store_facts key of LeaderboardRulesDigest.
inline constexpr char kLeaderboardRulesKey[] = "leaderboard_rules";
// What the rows SubmissionRow computes depend on besides the runs: the
// built-in registry's text (targets, reference convergence points) and the
// row format's version. A store whose rows were written under another
// digest writes them again when it opens.
std::string LeaderboardRulesDigest();

// The repeatability limits a coordinator serves its leaderboard with
// (hpcai500d --max-throughput-cv, --max-epochs-cv): fractions, 0.02 is 2%.
struct SpreadLimits {
  double throughput_cv = kDefaultMaxThroughputCvPct / 100;
  double epochs_to_target_cv = 0.10;
};
// Sets the response's limits and marks each row whose CV exceeds one
// unrepeatable.
void MarkSpread(const SpreadLimits& limits, v1::LeaderboardResponse& response);

// Orders `rows` (each with its rank) by the column `key` (one of
// kLeaderboardSortKeys; empty: left as they are), ascending or not; ties
// keep their order. By rank, unranked rows stay last in either direction.
void SortLeaderboardRows(
    google::protobuf::RepeatedPtrField<v1::LeaderboardRow>& rows,
    absl::string_view key, bool ascending);

// Keeps only the page of response.rows() from request.offset(),
// request.limit() rows (0: all).
void PageLeaderboard(const v1::LeaderboardRequest& request,
                     v1::LeaderboardResponse& response);

}  // namespace hpcai500

#endif  // HPCAI500_SERVER_STORE_LEADERBOARD_H_
