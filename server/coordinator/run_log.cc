#include "server/coordinator/run_log.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/run_state.h"

namespace hpcai500 {

std::string Describe(const v1::AttemptKey& key) {
  return absl::StrCat("run ", key.run_id(), " attempt ", key.attempt());
}

std::string TailOf(const std::string& text, size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  return "..." + text.substr(text.size() - max_bytes);
}

std::string ExitError(const std::string& node, const v1::WorkerExited& exit) {
  std::string what;
  if (!exit.error().empty()) {
    what = absl::StrCat("could not start: ", exit.error());
  } else if (exit.signal() != 0) {
    what = absl::StrCat("was killed by signal ", exit.signal());
  } else {
    what = absl::StrCat("exited with code ", exit.exit_code());
  }
  std::string text =
      absl::StrCat("rank ", exit.rank(), " on node ", node, " ", what);
  std::string tail = std::string(absl::StripTrailingAsciiWhitespace(
      TailOf(exit.stderr_tail(), kMaxStderrTailBytes)));
  if (!tail.empty()) absl::StrAppend(&text, "; stderr tail:\n", tail);
  return text;
}

std::string EpochLine(const v1::EpochSummary& epoch, int epochs,
                      const std::string& metric) {
  std::string line = absl::StrFormat(
      "epoch %d/%d: %d samples in %.1f s (%.1f samples/s), loss %.3f",
      epoch.epoch(), epochs, epoch.samples(), epoch.seconds(),
      epoch.throughput(), epoch.train_loss());
  if (epoch.accuracy() >= 0) {
    absl::StrAppendFormat(&line, ", %s %.4f", metric, epoch.accuracy());
  }
  return line;
}

std::string FinalLine(const v1::Run& run, const std::string& metric) {
  switch (run.state()) {
    case v1::RUN_STATE_SUCCEEDED: {
      if (!run.has_score()) return "succeeded";
      const v1::Score& s = run.score();
      return absl::StrFormat(
          "succeeded: %s %.4f (target %.4f, %s); %.4g FLOPS, Valid FLOPS "
          "%.4g",
          metric, s.quality(), s.target(),
          s.reached_target() ? "reached" : "below target", s.flops(),
          s.valid_flops());
    }
    case v1::RUN_STATE_FAILED:
      return absl::StrCat("failed: ", run.error());
    case v1::RUN_STATE_CANCELLED:
      return run.error().empty() ? "cancelled"
                                 : absl::StrCat("cancelled: ", run.error());
    case v1::RUN_STATE_ABORTED:
      return absl::StrCat("aborted: ", run.error());
    default:
      return RunStateName(run.state());
  }
}

}  // namespace hpcai500
