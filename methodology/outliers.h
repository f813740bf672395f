// The one robust outlier rule behind node health (docs/design.md "Node
// health"): a value is an outlier of a sample when its robust z-score,
// 0.6745 x (value - median) / MAD, passes the threshold on the bad side AND
// it differs from the median by at least a minimum share of it. The MAD is
// floored at a share of the median, so that a sample of near-equal values
// (MAD 0) does not flag a small wobble, and the relative minimum keeps a
// very tight sample from flagging what no operator would call slow. Used for
// pre-flight figures (against the node's own history and the latest figures
// of its inventory class) and for stragglers (a rank's own time against its
// peers' in each epoch of a run). Pure: no clock, no I/O.
//
// Thread-safe: free functions over values.
#ifndef HPCAI500_METHODOLOGY_OUTLIERS_H_
#define HPCAI500_METHODOLOGY_OUTLIERS_H_

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace hpcai500 {

// Which side of the median is bad.
enum class BadSide {
  kLow,   // a rate: GFLOP/s, GB/s (lower is worse)
  kHigh,  // a time: seconds per sample (higher is worse)
};

// The operator's rule (hpcai500d --outlier-z, --outlier-min-change).
struct OutlierRule {
  // |robust z| beyond this on the bad side (Iglewicz and Hoaglin's 3.5).
  double z_threshold = 3.5;
  // And at least this share of the median away from it (0.20: 20%).
  double min_relative_change = 0.20;
  // The MAD is taken as at least this share of |median|: about what one
  // measurement repeats within (bench/RESULTS.md), so that peers that
  // happen to agree closely do not make their own noise an outlier.
  double mad_floor = 0.05;
  // A sample smaller than this gives no verdict (with 2 values the z-score
  // is the same for both whatever they are).
  size_t min_sample = 3;
};

// Where a value stands in a sample.
struct Deviation {
  double value = 0;
  double median = 0;
  double mad = 0;  // after the floor
  double z = 0;    // robust z-score, signed (negative: below the median)
  double relative_change = 0;  // (value - median) / |median|, signed
  size_t sample = 0;           // values in the sample
};

// Where `value` stands in `sample` (which may or may not contain it: the
// caller says what the sample is), or nullopt when the sample has fewer than
// rule.min_sample values or its median is 0 (nothing to compare with).
std::optional<Deviation> Deviate(double value,
                                 const std::vector<double>& sample,
                                 const OutlierRule& rule);

// Whether `d` is an outlier on `bad` side under `rule` (see the top).
bool IsOutlier(const Deviation& d, BadSide bad, const OutlierRule& rule);

// "-62% (z -41.2) against the median 12.5 of 8" : how `d` reads in
// evidence, with the median printed with `unit` after it ("" for none).
std::string DeviationText(const Deviation& d, const std::string& unit);

// One rank's own time in one epoch: the seconds it spent not waiting for its
// peers (compute + input wait - communication wait), per sample.
struct RankEpochTime {
  int rank = 0;
  int epoch = 0;
  double seconds_per_sample = 0;
};

// A rank slower than its peers in enough epochs of one attempt.
struct Straggler {
  int rank = 0;
  int slow_epochs = 0;  // epochs where its time was an outlier
  int epochs = 0;       // epochs with at least rule.min_sample ranks
  Deviation worst;      // its deviation in the slowest of those epochs
};

// The ranks that are persistent stragglers among `times` (any order; one
// value per rank and epoch, a repeated (rank, epoch) keeps the last): per
// epoch, a rank whose time is an outlier on the high side against every
// rank of that epoch (itself included), in at least `min_epochs` epochs and
// at least half of the epochs that could judge. Ordered by rank.
std::vector<Straggler> FindStragglers(const std::vector<RankEpochTime>& times,
                                      const OutlierRule& rule,
                                      int min_epochs = 2);

}  // namespace hpcai500

#endif  // HPCAI500_METHODOLOGY_OUTLIERS_H_
