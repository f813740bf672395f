// `hpcai500d token ...`: API tokens managed on the coordinator's host, by
// whoever may write its database (the admin of the deployment):
//   hpcai500d token create --role R [--user U] [--node N] [--db FILE]
//   hpcai500d token list [--db FILE]
//   hpcai500d token revoke ID [--db FILE]
// `create` prints the token once on stdout; only its keyed hash is kept. It
// works beside a running hpcai500d (the coordinator sees a new or revoked
// token on the next call) and writes an audit row for each change.
//
// Thread-safe: a function of its arguments and the files it names.
#ifndef HPCAI500_SERVER_AUTH_TOKEN_COMMAND_H_
#define HPCAI500_SERVER_AUTH_TOKEN_COMMAND_H_

#include <ostream>
#include <string>
#include <vector>

#include "common/clock.h"

namespace hpcai500 {

// Runs `hpcai500d token` with `args` (after "token"). Returns the exit
// code: 0 done, 1 failed (the reason on err), 2 a bad command line (with
// the usage).
int RunTokenCommand(const std::vector<std::string>& args, Clock& clock,
                    std::ostream& out, std::ostream& err);

}  // namespace hpcai500

#endif  // HPCAI500_SERVER_AUTH_TOKEN_COMMAND_H_
