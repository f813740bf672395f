// `hpcai500d backup --db FILE --out FILE`: a consistent copy of the live
// database while hpcai500d runs (SQLite's online backup API reads one
// snapshot; the coordinator keeps writing), with the token key beside it.
// Restoring is copying both back while hpcai500d is stopped (README
// "Backup and restore").
//
// Thread-safe: a function of its arguments and the files it names.
#ifndef HPCAI500_SERVER_STORE_BACKUP_COMMAND_H_
#define HPCAI500_SERVER_STORE_BACKUP_COMMAND_H_

#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace hpcai500 {

// Copies database `db` into a new file `out` (which must not exist) as one
// consistent snapshot, and `db`'s token key (if any) to `out`.token-key,
// mode 0600. Errors name the file.
absl::Status BackupDatabase(const std::string& db, const std::string& out);

// Runs `hpcai500d backup` with `args` (after "backup"). Returns the exit
// code: 0 done, 1 failed (the reason on err), 2 a bad command line.
int RunBackupCommand(const std::vector<std::string>& args, std::ostream& out,
                     std::ostream& err);

}  // namespace hpcai500

#endif  // HPCAI500_SERVER_STORE_BACKUP_COMMAND_H_
