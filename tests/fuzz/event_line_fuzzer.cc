// ParseEventLine (common/events.h) on any line: it refuses with
// InvalidArgument or returns an event keeping the header's promises (a key,
// one of the three event types, seq >= 1, rank >= 0, metadata an object).
#include <string>

#include "absl/status/status.h"
#include "common/events.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using hpcai500::FuzzCheck;
  const std::string_view line = hpcai500::FuzzText(data, size);
  absl::StatusOr<hpcai500::EventLine> event = hpcai500::ParseEventLine(line);
  if (!event.ok()) {
    FuzzCheck(absl::IsInvalidArgument(event.status()),
              "a refused line is InvalidArgument", event.status().ToString());
    return 0;
  }
  FuzzCheck(!event->key.empty(), "an event has a key", line);
  FuzzCheck(event->event_type == "POINT_IN_TIME" ||
                event->event_type == "INTERVAL_START" ||
                event->event_type == "INTERVAL_END",
            "an event has one of the three types", line);
  FuzzCheck(event->seq >= 1, "seq >= 1", line);
  FuzzCheck(event->rank >= 0, "rank >= 0", line);
  FuzzCheck(event->metadata.is_object(), "metadata is an object", line);
  FuzzCheck(event->epoch() >= -1, "epoch() is -1 or a metadata integer", line);
  return 0;
}
