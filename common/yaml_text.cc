#include "common/yaml_text.h"

#include <yaml-cpp/eventhandler.h>

#include <cstdint>
#include <sstream>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace hpcai500 {
namespace {

// Valid YAML yields at most about one and a half events per byte ("{a}":
// map start, key, null value, map end for three bytes, plus the document's
// start and end); the looping parser yields events without end.
constexpr int64_t kEventsPerByte = 4;
constexpr int64_t kEventsOfAnyText = 16;

// Thrown out of the parser to stop it; caught by CheckParserEnds.
struct TooManyEvents {
  YAML::Mark mark;
};

// Counts the parser's events and stops it past `limit`, remembering where it
// was.
class EventCounter final : public YAML::EventHandler {
 public:
  explicit EventCounter(int64_t limit) : limit_(limit) {}

  void OnDocumentStart(const YAML::Mark& mark) override { Count(mark); }
  void OnDocumentEnd() override { Count(last_); }
  void OnNull(const YAML::Mark& mark, YAML::anchor_t) override { Count(mark); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override { Count(mark); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                const std::string&) override {
    Count(mark);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&,
                       YAML::anchor_t, YAML::EmitterStyle::value) override {
    Count(mark);
  }
  void OnSequenceEnd() override { Count(last_); }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    Count(mark);
  }
  void OnMapEnd() override { Count(last_); }

 private:
  void Count(const YAML::Mark& mark) {
    last_ = mark;
    if (++events_ > limit_) throw TooManyEvents{mark};
  }

  const int64_t limit_;
  int64_t events_ = 0;
  YAML::Mark last_;
};

absl::Status NotValid(absl::string_view what, const YAML::Mark& mark,
                      absl::string_view reason) {
  return absl::InvalidArgumentError(
      absl::StrCat(what, " is not valid YAML: line ", mark.line + 1,
                   ", column ", mark.column + 1, ": ", reason));
}

// OK when yaml-cpp gets through every document of `text` within the bound.
absl::Status CheckParserEnds(const std::string& text, absl::string_view what) {
  std::istringstream in(text);
  EventCounter counter(kEventsPerByte * static_cast<int64_t>(text.size()) +
                       kEventsOfAnyText);
  try {
    YAML::Parser parser(in);
    while (parser.HandleNextDocument(counter)) {
    }
  } catch (const TooManyEvents& stop) {
    return NotValid(what, stop.mark,
                    "the parser does not get past this point (a stray ','?)");
  } catch (const YAML::Exception& e) {
    return NotValid(what, e.mark, e.msg);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<YAML::Node>> LoadYamlDocuments(
    std::string_view text, absl::string_view what) {
  const std::string copy(text);
  if (absl::Status ends = CheckParserEnds(copy, what); !ends.ok()) return ends;
  try {
    return YAML::LoadAll(copy);
  } catch (const YAML::Exception& e) {
    return NotValid(what, e.mark, e.msg);
  }
}

}  // namespace hpcai500
