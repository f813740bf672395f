// `hpcai500d site-key create|show`: see site_key_command.h.
#include "server/auth/site_key_command.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "common/flags.h"
#include "common/printable.h"
#include "common/status_macros.h"

namespace hpcai500 {
namespace {

constexpr char kUsage[] =
    "usage: hpcai500d site-key create [--db FILE]\n"
    "       hpcai500d site-key show [--db FILE]\n"
    "  create makes the Ed25519 key that signs this coordinator's result\n"
    "  bundles (FILE.site-key, mode 0600; refused when there is one) and\n"
    "  prints its public key, the site's identity; show prints it again.\n"
    "  --db defaults to ./hpcai500.db, as for hpcai500d.\n"
    "exit codes: 0 done, 1 the key could not be made or read, 2 a bad "
    "command line\n";

// Writes `pem` to a new file at `path` (mode 0600); AlreadyExists when
// there is one.
absl::Status WriteNewKeyFile(const std::string& path, const std::string& pem) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
  if (fd < 0) {
    if (errno == EEXIST) {
      return absl::AlreadyExistsError(absl::StrCat(
          path, " exists: this site has its key (hpcai500d site-key show)"));
    }
    return absl::UnavailableError(
        absl::StrCat("cannot create ", path, ": ", std::strerror(errno)));
  }
  const bool written =
      ::write(fd, pem.data(), pem.size()) == static_cast<ssize_t>(pem.size());
  const bool synced = ::fsync(fd) == 0;
  ::close(fd);
  if (!written || !synced) {
    ::unlink(path.c_str());
    return absl::UnavailableError(absl::StrCat("cannot write ", path));
  }
  return absl::OkStatus();
}

absl::Status Run(const std::vector<std::string>& args, std::ostream& out,
                 std::ostream& err) {
  const std::string verb = args.front();
  if (verb != "create" && verb != "show") {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown site-key command '", verb, "'"));
  }
  std::string db = "./hpcai500.db";
  std::unique_ptr<CLI::App> app = NewFlagApp("hpcai500d site-key " + verb);
  AddValueFlag(*app, "db", &db);
  RETURN_IF_ERROR(
      ParseFlags(*app, std::vector<std::string>(args.begin() + 1, args.end())));
  const std::string path = SiteKeyPathFor(db);
  if (verb == "create") {
    ASSIGN_OR_RETURN(const SiteKey key, SiteKey::Generate());
    RETURN_IF_ERROR(WriteNewKeyFile(path, key.ToPem()));
    out << key.PublicKeyHex() << "\n";
    err << "hpcai500d: site key written to " << path
        << "; the line above is its public key, this site's identity\n";
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(const SiteKey key, LoadSiteKey(path));
  out << key.PublicKeyHex() << "\n";
  return absl::OkStatus();
}

}  // namespace

std::string SiteKeyPathFor(const std::string& db_path) {
  return db_path + ".site-key";
}

absl::StatusOr<SiteKey> LoadSiteKey(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return absl::FailedPreconditionError(absl::StrCat(
        "no site key at ", path, " (make one: hpcai500d site-key create)"));
  }
  std::stringstream text;
  text << in.rdbuf();
  absl::StatusOr<SiteKey> key = SiteKey::FromPem(text.str());
  if (!key.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": ", key.status().message()));
  }
  return key;
}

int RunSiteKeyCommand(const std::vector<std::string>& args, std::ostream& out,
                      std::ostream& err) {
  if (args.empty() || args.front() == "--help" || args.front() == "-h") {
    (args.empty() ? err : out) << kUsage;
    return args.empty() ? 2 : 0;
  }
  absl::Status status = Run(args, out, err);
  if (status.ok()) return 0;
  err << "hpcai500d site-key: " << EscapeLine(std::string(status.message()))
      << "\n";
  if (absl::IsInvalidArgument(status) &&
      status.message().find(".site-key") == std::string::npos) {
    err << kUsage;
    return 2;
  }
  return 1;
}

}  // namespace hpcai500
