#include "server/store/backup_command.h"

#include <sqlite3.h>

#include <filesystem>
#include <memory>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "common/flags.h"
#include "common/status_macros.h"
#include "server/store/store.h"

namespace hpcai500 {
namespace {

constexpr char kBackupUsage[] =
    "usage: hpcai500d backup --db FILE --out FILE\n"
    "  copies the database (one consistent snapshot, also while hpcai500d\n"
    "  runs) and its token key (FILE.token-key) to --out, a new file.\n"
    "exit codes: 0 copied, 1 the copy failed, 2 a bad command line\n";

struct CloseDb {
  void operator()(sqlite3* db) const { sqlite3_close(db); }
};
using Db = std::unique_ptr<sqlite3, CloseDb>;

absl::StatusOr<Db> OpenDb(const std::string& path, int flags) {
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  Db db(raw);
  if (rc != SQLITE_OK) {
    return absl::UnavailableError(absl::StrCat(
        "database ", path, ": cannot open: ",
        raw != nullptr ? sqlite3_errmsg(raw) : sqlite3_errstr(rc)));
  }
  sqlite3_busy_timeout(raw, 10'000);
  return db;
}

}  // namespace

absl::Status BackupDatabase(const std::string& db, const std::string& out) {
  std::error_code ec;
  if (!std::filesystem::exists(db, ec)) {
    return absl::NotFoundError(absl::StrCat("database ", db, ": no such file"));
  }
  if (std::filesystem::exists(out, ec)) {
    return absl::AlreadyExistsError(
        absl::StrCat("--out ", out, ": exists; name a new file"));
  }
  ASSIGN_OR_RETURN(Db source, OpenDb(db, SQLITE_OPEN_READONLY));
  ASSIGN_OR_RETURN(Db target,
                   OpenDb(out, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE));
  sqlite3_backup* backup =
      sqlite3_backup_init(target.get(), "main", source.get(), "main");
  if (backup == nullptr) {
    return absl::InternalError(absl::StrCat("backup of ", db, " to ", out, ": ",
                                            sqlite3_errmsg(target.get())));
  }
  // All pages in one step: one read transaction, so one snapshot, while
  // the coordinator's WAL writes go on beside it.
  int rc;
  while ((rc = sqlite3_backup_step(backup, -1)) == SQLITE_BUSY ||
         rc == SQLITE_LOCKED) {
    sqlite3_sleep(100);
  }
  sqlite3_backup_finish(backup);
  if (rc != SQLITE_DONE) {
    target.reset();
    std::filesystem::remove(out, ec);
    return absl::InternalError(
        absl::StrCat("backup of ", db, " to ", out, ": ", sqlite3_errstr(rc)));
  }
  const std::string key = TokenKeyPath(db);
  if (std::filesystem::exists(key, ec)) {
    const std::string key_out = TokenKeyPath(out);
    std::filesystem::copy_file(key, key_out, ec);
    if (!ec) {
      std::filesystem::permissions(key_out,
                                   std::filesystem::perms::owner_read |
                                       std::filesystem::perms::owner_write,
                                   ec);
    }
    if (ec) {
      return absl::UnavailableError(absl::StrCat(
          "token key ", key, ": cannot copy to ", key_out, ": ", ec.message()));
    }
  }
  return absl::OkStatus();
}

int RunBackupCommand(const std::vector<std::string>& args, std::ostream& out,
                     std::ostream& err) {
  std::string db, to;
  bool help = false;
  std::unique_ptr<CLI::App> app = NewFlagApp("hpcai500d backup");
  AddValueFlag(*app, "db", &db);
  AddValueFlag(*app, "out", &to);
  AddSwitch(*app, "help,h", &help);
  absl::Status parsed = ParseFlags(*app, args);
  if (parsed.ok() && help) {
    out << kBackupUsage;
    return 0;
  }
  if (parsed.ok() && (db.empty() || to.empty())) {
    parsed = absl::InvalidArgumentError("--db and --out are required");
  }
  if (!parsed.ok()) {
    err << "hpcai500d backup: " << parsed.message() << "\n" << kBackupUsage;
    return 2;
  }
  if (absl::Status done = BackupDatabase(db, to); !done.ok()) {
    err << "hpcai500d backup: " << done.message() << "\n";
    return 1;
  }
  err << "hpcai500d backup: " << db << " copied to " << to << "\n";
  return 0;
}

}  // namespace hpcai500
