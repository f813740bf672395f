#include "server/coordinator/found_checkpoint.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/checkpoint_manifest.h"
#include "common/event_keys.h"
#include "common/status_macros.h"
#include "common/worker_args.h"
#include "server/coordinator/event_intake.h"

namespace hpcai500 {

namespace {

absl::Status Refused(const std::string& why) {
  return absl::FailedPreconditionError(why);
}

// The manifest of `found` when it names this run, the probed attempt and
// an epoch newer than the resume point within the budget.
absl::StatusOr<CheckpointManifest> CheckIdentity(
    const v1::FoundCheckpoint& found, const ResumeFacts& facts) {
  if (!found.error().empty()) {
    return Refused(
        absl::StrCat("its agent could not read it: ", found.error()));
  }
  if (facts.probed_attempt == 0 || found.attempt() != facts.probed_attempt) {
    return Refused(absl::StrFormat(
        "it is in attempt %d's folder, but attempt %d's was asked about",
        found.attempt(), facts.probed_attempt));
  }
  CheckpointManifest manifest;
  std::string error;
  if (!ParseCheckpointManifest(found.manifest(), &manifest, &error)) {
    return Refused(absl::StrCat("its manifest: ", error));
  }
  if (manifest.run_id != facts.run_id) {
    return Refused(
        absl::StrFormat("its manifest is run %d's", manifest.run_id));
  }
  if (manifest.attempt != found.attempt()) {
    return Refused(absl::StrFormat(
        "its manifest names attempt %d, found in attempt %d's folder",
        manifest.attempt, found.attempt()));
  }
  if (manifest.epoch <= facts.resume_epoch) {
    return Refused(absl::StrFormat(
        "epoch %d is not newer than epoch %d, the resume point already known",
        manifest.epoch, facts.resume_epoch));
  }
  if (manifest.epoch > facts.epochs) {
    return Refused(absl::StrFormat("epoch %d is past the run's %d epochs",
                                   manifest.epoch, facts.epochs));
  }
  return manifest;
}

// That the agent read the very files the worker wrote.
absl::Status CheckFiles(const CheckpointManifest& manifest,
                        const v1::FoundCheckpoint& found) {
  const std::string main = CheckpointFileName(manifest.epoch);
  if (std::none_of(
          manifest.files.begin(), manifest.files.end(),
          [&](const CheckpointManifest::File& f) { return f.name == main; })) {
    return Refused(absl::StrCat("its manifest does not name ", main));
  }
  if (CheckpointDigest(manifest.files) != found.digest()) {
    return Refused(
        "its files' digest on disk differs from the one the worker wrote "
        "(changed or replaced since)");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<VerifiedCheckpoint> VerifyFoundCheckpoint(
    const v1::FoundCheckpoint& found, const ResumeFacts& facts) {
  ASSIGN_OR_RETURN(CheckpointManifest manifest, CheckIdentity(found, facts));
  RETURN_IF_ERROR(CheckFiles(manifest, found));
  if (manifest.events.empty()) return Refused("its manifest has no events");
  VerifiedCheckpoint verified;
  verified.attempt = found.attempt();
  verified.epoch = static_cast<int32_t>(manifest.epoch);
  EventLine last;
  for (std::string& line : manifest.events) {
    v1::Event event;
    event.set_rank(0);
    event.set_line(std::move(line));
    // Each line carries its own seq; the first sets where the run begins.
    absl::StatusOr<EventLine> parsed = ParseEventLine(event.line());
    const int64_t seq = verified.events.empty()
                            ? (parsed.ok() ? parsed->seq : 0)
                            : verified.events.back().first + 1;
    event.set_seq(seq);
    absl::StatusOr<EventLine> checked = ParseAgentEvent(event);
    if (!checked.ok()) {
      return Refused(absl::StrCat("its event line ", verified.events.size() + 1,
                                  ": ", checked.status().message()));
    }
    last = *std::move(checked);
    verified.events.emplace_back(seq, std::move(*event.mutable_line()));
  }
  const int64_t first = verified.events.front().first;
  if (first < 1 || first > facts.stored_through_seq + 1) {
    return Refused(absl::StrFormat(
        "its lines start at seq %d, but rank 0's are stored only through "
        "seq %d: the lines between are lost",
        first, facts.stored_through_seq));
  }
  if (last.key != event_keys::kCheckpoint || last.epoch() != verified.epoch) {
    return Refused(absl::StrFormat(
        "its lines do not end with the checkpoint event of epoch %d",
        verified.epoch));
  }
  return verified;
}

}  // namespace hpcai500
