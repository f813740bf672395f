// The result-bundle commands of `hpcai500` (docs/design.md "Result
// bundles"): export a run's or a submission's signed bundle from the
// coordinator, verify a bundle offline, and replay a bundle's spec on the
// coordinator to compare the two results. Exit codes in
// cli/client/exit_codes.h.
//
// Not thread-safe: one command at a time.
#ifndef HPCAI500_CLI_COMMANDS_BUNDLE_COMMANDS_H_
#define HPCAI500_CLI_COMMANDS_BUNDLE_COMMANDS_H_

#include <cstdint>
#include <ostream>
#include <string>

#include "absl/status/statusor.h"
#include "cli/client/command_context.h"
#include "common/tls_files.h"
#include "methodology/bundle_verify.h"

namespace hpcai500 {

// The most bytes a bundle file may have: what a verifier decompresses at
// most (ArchiveLimits) is more than any honest bundle compresses to.
inline constexpr int64_t kMaxBundleFileBytes = 256ll << 20;

// The bytes of the bundle file at `path`. NotFound when it cannot be read,
// InvalidArgument past kMaxBundleFileBytes.
absl::StatusOr<std::string> ReadBundleFile(const std::string& path);

// One line per check ("ok    signature  Ed25519 by ..."), then the verdict.
std::string BundleReportText(const BundleReport& report);
// The report as JSON: ok, subject, site_key, checks [{name, ok, detail}].
std::string BundleReportJson(const BundleReport& report);

class BundleCommands {
 public:
  // What `context` lends is borrowed for the life of the object.
  explicit BundleCommands(const CommandContext& context);

  // Asks the coordinator's BundleService (on the channel `tls` describes,
  // with the client's token and deadline) for the bundle of run `id` (of
  // submission `id` when `submission`) and writes it to `out_path`
  // (replacing it only once it is whole). kExitOk, kExitNoInput when the
  // TLS files cannot be read, kExitFailed or kExitUnavailable.
  int Export(int64_t id, bool submission, const std::string& out_path,
             const TlsFileFlags& tls);
  // Verifies the bundle at `path` offline and prints the report (JSON when
  // `json`). kExitOk only when every check holds; kExitNoInput when the file
  // cannot be read; else kExitFailed.
  int Verify(const std::string& path, bool json);
  // Verifies the bundle at `path`, submits the spec of its first run to the
  // coordinator (one repetition, its seed, config, precision and fast paths
  // as they were), waits for it, and prints the bundle's result and the
  // replay's side by side with their ratio. The replay's exit code as
  // `submit --wait` gives it, or kExitFailed for a bundle that does not
  // verify.
  int Replay(const std::string& path);

 private:
  // Constant after construction.
  CommandContext context_;
};

}  // namespace hpcai500

#endif  // HPCAI500_CLI_COMMANDS_BUNDLE_COMMANDS_H_
