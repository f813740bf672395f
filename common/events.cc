#include "common/events.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/event_keys.h"

namespace hpcai500 {
namespace {

// Whether get<int64_t>() of a JSON number is defined: a float (which is
// also what an integer literal too long for 64 bits parses to) must lie in
// int64_t's range, or the conversion is undefined behaviour.
bool FitsInt64(const nlohmann::json& number) {
  if (!number.is_number_float()) return true;
  const double value = number.get<double>();
  return value >= -0x1p63 && value < 0x1p63;  // false for NaN
}

}  // namespace

int EventLine::epoch() const {
  auto it = metadata.find(event_keys::kMetaEpochNum);
  if (it == metadata.end() || !it->is_number_integer()) return -1;
  return it->get<int>();
}

absl::StatusOr<EventLine> ParseEventLine(std::string_view line) {
  if (line.size() > kMaxEventLineBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("event line of ", line.size(),
                     " bytes exceeds the limit of ", kMaxEventLineBytes));
  }
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) {
    line.remove_suffix(1);
  }
  if (line.substr(0, kMllogPrefix.size()) != kMllogPrefix) {
    return absl::InvalidArgumentError(
        "event line does not start with ':::MLLOG '");
  }
  line.remove_prefix(kMllogPrefix.size());
  nlohmann::json doc = nlohmann::json::parse(line, nullptr,
                                             /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return absl::InvalidArgumentError("event line is not a JSON object");
  }
  EventLine event;
  auto key = doc.find("key");
  if (key == doc.end() || !key->is_string() ||
      key->get<std::string>().empty()) {
    return absl::InvalidArgumentError("event line has no string 'key'");
  }
  event.key = key->get<std::string>();
  auto time = doc.find("time_ms");
  if (time == doc.end() || !time->is_number()) {
    return absl::InvalidArgumentError(
        absl::StrCat("event '", event.key, "': 'time_ms' is not a number"));
  }
  if (!FitsInt64(*time)) {
    return absl::InvalidArgumentError(
        absl::StrCat("event '", event.key, "': 'time_ms' is out of range"));
  }
  event.time_ms = time->get<int64_t>();
  auto type = doc.find("event_type");
  if (type == doc.end() || !type->is_string()) {
    return absl::InvalidArgumentError(
        absl::StrCat("event '", event.key, "': no string 'event_type'"));
  }
  event.event_type = type->get<std::string>();
  if (event.event_type != "POINT_IN_TIME" &&
      event.event_type != "INTERVAL_START" &&
      event.event_type != "INTERVAL_END") {
    return absl::InvalidArgumentError(absl::StrCat("event '", event.key,
                                                   "': unknown event_type '",
                                                   event.event_type, "'"));
  }
  if (auto value = doc.find("value"); value != doc.end()) {
    event.value = *value;
  }
  auto metadata = doc.find("metadata");
  if (metadata == doc.end() || !metadata->is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat("event '", event.key, "': 'metadata' is not an object"));
  }
  event.metadata = *metadata;
  auto seq = metadata->find(event_keys::kMetaSeq);
  if (seq == metadata->end() || !seq->is_number_integer() ||
      seq->get<int64_t>() < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "event '", event.key, "': metadata.seq must be an integer >= 1"));
  }
  event.seq = seq->get<int64_t>();
  auto rank = metadata->find(event_keys::kMetaRank);
  if (rank == metadata->end() || !rank->is_number_integer() ||
      rank->get<int64_t>() < 0 || rank->get<int64_t>() > 1 << 20) {
    return absl::InvalidArgumentError(absl::StrCat(
        "event '", event.key, "': metadata.rank must be an integer >= 0"));
  }
  event.rank = rank->get<int>();
  return event;
}

}  // namespace hpcai500
