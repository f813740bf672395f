// The site key of a coordinator (methodology/site_key.h): the Ed25519 key
// that signs the result bundles it exports, kept beside its database
// (SiteKeyPathFor) and managed on its host:
//   hpcai500d site-key create [--db FILE]   makes it (once), prints the
//                                           public key
//   hpcai500d site-key show [--db FILE]     prints the public key
// The public key (64 hex digits) is the site's identity: what a receiving
// coordinator's admin registers for its publisher token.
//
// Thread-safe: functions of their arguments and the files they name.
#ifndef HPCAI500_SERVER_AUTH_SITE_KEY_COMMAND_H_
#define HPCAI500_SERVER_AUTH_SITE_KEY_COMMAND_H_

#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "methodology/site_key.h"

namespace hpcai500 {

// Where the site key of the database at `db_path` is kept.
std::string SiteKeyPathFor(const std::string& db_path);

// The site key in the file at `path`. FailedPrecondition naming the file
// and the command that makes it when there is none; InvalidArgument when
// it holds no Ed25519 key.
absl::StatusOr<SiteKey> LoadSiteKey(const std::string& path);

// Runs `hpcai500d site-key` with `args` (after "site-key"). Returns the
// exit code: 0 done, 1 failed (the reason on err), 2 a bad command line.
int RunSiteKeyCommand(const std::vector<std::string>& args, std::ostream& out,
                      std::ostream& err);

}  // namespace hpcai500

#endif  // HPCAI500_SERVER_AUTH_SITE_KEY_COMMAND_H_
