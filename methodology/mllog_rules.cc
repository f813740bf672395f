// MLCommons' structural log rules: see mllog_rules.h.
#include "methodology/mllog_rules.h"

#include <map>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/event_keys.h"

namespace hpcai500 {
namespace {

using event_keys::kBlockStart;
using event_keys::kEpochStart;
using event_keys::kEpochStop;
using event_keys::kEvalAccuracy;
using event_keys::kEvalStart;
using event_keys::kEvalStop;
using event_keys::kInitStart;
using event_keys::kInitStop;
using event_keys::kMetaEpochNum;
using event_keys::kMetaStatus;
using event_keys::kRunStart;
using event_keys::kRunStop;
using event_keys::kStatusSuccess;

bool NeedsEpochNum(const std::string& key) {
  return key == kEpochStart || key == kEpochStop || key == kEvalStart ||
         key == kEvalStop || key == kEvalAccuracy;
}

bool AtMostOnce(const std::string& key) {
  return key == kInitStart || key == kInitStop || key == kRunStart ||
         key == kRunStop || absl::StartsWith(key, "submission_");
}

absl::Status Broken(const EventLine& line, absl::string_view rule) {
  return absl::InvalidArgumentError(
      absl::StrCat("seq ", line.seq, " (", line.key, "): ", rule));
}

}  // namespace

absl::Status CheckMllogRules(const std::vector<EventLine>& lines, int rank,
                             bool finished) {
  std::map<std::string, const EventLine*> first;
  int64_t expected_seq = 1;
  for (const EventLine& line : lines) {
    if (line.seq != expected_seq) {
      return Broken(line, absl::StrCat("seq ", expected_seq, " expected"));
    }
    ++expected_seq;
    if (line.rank != rank) {
      return Broken(line, absl::StrCat("metadata.rank is ", line.rank,
                                       " in rank ", rank, "'s log"));
    }
    if (AtMostOnce(line.key) && first.count(line.key) > 0) {
      return Broken(line, "may appear only once");
    }
    const bool started = first.count(kRunStart) > 0;
    const bool stopped = first.count(kRunStop) > 0;
    if ((line.key == kInitStart || line.key == kInitStop) && started) {
      return Broken(line, "after run_start");
    }
    if (line.key == kInitStop && first.count(kInitStart) == 0 &&
        first.count(kInitStop) == 0) {
      // init_stop without init_start: the checker requires the pair.
      return Broken(line, "without init_start before it");
    }
    if (NeedsEpochNum(line.key) || line.key == kBlockStart) {
      if (!started) return Broken(line, "before run_start");
      if (stopped) return Broken(line, "after run_stop");
    }
    if (NeedsEpochNum(line.key) &&
        !line.metadata.value(kMetaEpochNum, nlohmann::json()).is_number()) {
      return Broken(line, "no metadata.epoch_num");
    }
    if (line.key == kBlockStart) {
      const nlohmann::json count =
          line.metadata.value("epoch_count", nlohmann::json());
      if (!line.metadata.contains("first_epoch_num") ||
          !count.is_number_integer() || count.get<int64_t>() <= 0) {
        return Broken(line, "needs first_epoch_num and an epoch_count > 0");
      }
    }
    if (line.key == kRunStop) {
      if (!started) return Broken(line, "before run_start");
      if (line.time_ms < first.at(kRunStart)->time_ms) {
        return Broken(line, "earlier in time than run_start");
      }
    }
    first.emplace(line.key, &line);
  }
  // An earlier attempt may have ended anywhere, before run_start too.
  if (!finished) return absl::OkStatus();
  if (first.count(kRunStart) == 0) {
    return absl::InvalidArgumentError("no run_start");
  }
  auto stop = first.find(kRunStop);
  if (stop == first.end()) return absl::InvalidArgumentError("no run_stop");
  if (stop->second->metadata.value(kMetaStatus, nlohmann::json()) !=
      kStatusSuccess) {
    return Broken(*stop->second, "metadata.status is not \"success\"");
  }
  return absl::OkStatus();
}

}  // namespace hpcai500
