#include "server/auth/token_command.h"

#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "common/flags.h"
#include "common/printable.h"
#include "common/status_macros.h"
#include "server/auth/access_control.h"
#include "server/auth/auth.h"
#include "server/store/store.h"

namespace hpcai500 {
namespace {

constexpr char kCreateUsage[] =
    "usage: hpcai500d token create --role viewer|operator|admin|agent\n"
    "                              [--user NAME] [--node NODE] [--db FILE]\n"
    "  --user defaults to agent-NODE for agent tokens and is required "
    "otherwise\n"
    "  (1 to 64 characters without spaces, quotes or control characters);\n"
    "  an agent token is bound to --node (a node name as agents register\n"
    "  with: letters, digits, '.', '-', '_'): it registers as that node "
    "only.\n";
constexpr char kListUsage[] = "usage: hpcai500d token list [--db FILE]\n";
constexpr char kRevokeUsage[] =
    "usage: hpcai500d token revoke ID [--db FILE]\n";
constexpr char kCommonUsage[] =
    "  --db defaults to ./hpcai500.db, as for hpcai500d.\n"
    "exit codes: 0 done, 1 the database could not be opened or written,\n"
    "2 a bad command line\n";

// The usage of `verb` (create, list, revoke), or of all three.
std::string TokenUsage(absl::string_view verb) {
  if (verb == "create") return absl::StrCat(kCreateUsage, kCommonUsage);
  if (verb == "list") return absl::StrCat(kListUsage, kCommonUsage);
  if (verb == "revoke") return absl::StrCat(kRevokeUsage, kCommonUsage);
  return absl::StrCat(
      "usage: hpcai500d token create --role viewer|operator|admin|agent\n"
      "                              [--user NAME] [--node NODE] [--db FILE]\n"
      "       hpcai500d token list [--db FILE]\n"
      "       hpcai500d token revoke ID [--db FILE]\n"
      "  (hpcai500d token create --help: the rules of --user and --node)\n",
      kCommonUsage);
}

// The store of `db`: as its owner when no hpcai500d holds it, else beside
// the running one.
absl::StatusOr<std::unique_ptr<Store>> OpenForTokens(const std::string& db) {
  absl::StatusOr<std::unique_ptr<Store>> owned = Store::Open(db);
  if (owned.ok() || !absl::IsFailedPrecondition(owned.status()) ||
      owned.status().message().find("in use by another hpcai500d") ==
          std::string::npos) {
    return owned;
  }
  return Store::Open(db, Store::Access::kBeside);
}

// Whoever runs the command, as the audit trail names them.
Principal HostAdmin() {
  const passwd* pw = ::getpwuid(::geteuid());
  return Principal{absl::StrCat("host:", pw != nullptr ? pw->pw_name : "?"),
                   Role::kAdmin, ""};
}

std::string FormatMs(int64_t ms) {
  if (ms == 0) return "-";
  return absl::FormatTime("%Y-%m-%d %H:%M:%S", absl::FromUnixMillis(ms),
                          absl::UTCTimeZone());
}

absl::Status Run(const std::vector<std::string>& args, Clock& clock,
                 std::ostream& out, std::ostream& err) {
  const std::string verb = args.front();
  std::string role_name, user, node, db = "./hpcai500.db";
  std::vector<std::string> rest;
  std::unique_ptr<CLI::App> app = NewFlagApp("hpcai500d token " + verb);
  AddValueFlag(*app, "db", &db);
  if (verb == "create") {
    AddValueFlag(*app, "role", &role_name);
    AddValueFlag(*app, "user", &user);
    AddValueFlag(*app, "node", &node);
  } else if (verb == "revoke") {
    app->add_option("id", rest)->required();
  } else if (verb != "list") {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown token command '", verb, "'"));
  }
  RETURN_IF_ERROR(
      ParseFlags(*app, std::vector<std::string>(args.begin() + 1, args.end())));
  ASSIGN_OR_RETURN(std::unique_ptr<Store> store, OpenForTokens(db));
  ASSIGN_OR_RETURN(TokenAuthenticator tokens,
                   TokenAuthenticator::Open(
                       store.get(), TokenAuthenticator::KeyPathFor(db)));
  AccessControl audit(store.get(), &clock, std::nullopt, "");
  const Principal admin = HostAdmin();
  if (verb == "create") {
    if (role_name.empty()) {
      return absl::InvalidArgumentError("--role: required");
    }
    ASSIGN_OR_RETURN(Role role, ParseRole(role_name));
    if (user.empty() && role == Role::kAgent) user = "agent-" + node;
    if (user.empty()) return absl::InvalidArgumentError("--user: required");
    ASSIGN_OR_RETURN(NewToken token,
                     tokens.Create(user, role, node, clock.NowMs()));
    audit.Audit(&admin, "token_create", absl::StrCat("token ", token.record.id),
                "local", /*allowed=*/true,
                absl::StrCat("for ", user, " (", role_name, ")",
                             node.empty() ? "" : " bound to node " + node));
    out << token.text << "\n";
    err << "hpcai500d: token " << token.record.id << " for " << user << " ("
        << role_name << (node.empty() ? "" : ", node " + node)
        << "): shown once, only its hash is kept\n";
    return absl::OkStatus();
  }
  if (verb == "revoke") {
    RETURN_IF_ERROR(store->RevokeToken(rest.front(), clock.NowMs()));
    audit.Audit(&admin, "token_revoke", absl::StrCat("token ", rest.front()),
                "local", /*allowed=*/true, "");
    err << "hpcai500d: token " << rest.front() << " revoked\n";
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(std::vector<TokenRecord> list, store->ListTokens());
  out << absl::StrFormat("%-16s  %-20s  %-8s  %-12s  %-19s  %s\n", "id", "user",
                         "role", "node", "created", "revoked");
  for (const TokenRecord& t : list) {
    // Rows stored before the name rules were checked here print escaped.
    out << absl::StrFormat("%-16s  %-20s  %-8s  %-12s  %-19s  %s\n", t.id,
                           EscapeLine(t.user), t.role,
                           t.node.empty() ? "-" : EscapeLine(t.node),
                           FormatMs(t.created_ms), FormatMs(t.revoked_ms));
  }
  return absl::OkStatus();
}

}  // namespace

int RunTokenCommand(const std::vector<std::string>& args, Clock& clock,
                    std::ostream& out, std::ostream& err) {
  // --help anywhere prints the verb's usage (`token create --help`), or
  // all three verbs' at the front; an unknown verb is refused first.
  const bool help = std::any_of(args.begin(), args.end(), [](const auto& a) {
    return a == "--help" || a == "-h";
  });
  const std::string verb = args.empty() ? "" : args.front();
  const bool known = verb == "create" || verb == "list" || verb == "revoke" ||
                     verb == "--help" || verb == "-h";
  if (!args.empty() && !known) {
    err << "hpcai500d token: unknown token command '" << EscapeLine(verb)
        << "'\n"
        << TokenUsage("");
    return 2;
  }
  if (args.empty() || help) {
    (args.empty() ? err : out) << TokenUsage(verb);
    return args.empty() ? 2 : 0;
  }
  absl::Status status = Run(args, clock, out, err);
  if (status.ok()) return 0;
  err << "hpcai500d token: " << EscapeLine(std::string(status.message()))
      << "\n";
  if (absl::IsInvalidArgument(status)) {
    err << TokenUsage(verb);
    return 2;
  }
  return 1;
}

}  // namespace hpcai500
