// Who may do what: API tokens with roles, made and checked here.
//
// A token is "hai5_<id>_<secret>": a public id (16 hex digits) that finds its
// row, and a 256-bit secret (64 hex digits). The store keeps only
// HMAC-SHA256(key, secret), keyed with a 32-byte key in a file beside the
// database ("<db>.token-key", mode 0600, made on first use): a copy of the
// database alone lets nobody check guesses. The check compares hashes in
// constant time (CRYPTO_memcmp).
//
// Roles (docs/design.md "Who may do what"):
//   viewer    reads: runs, nodes, leaderboard, the pages
//   operator  a viewer who submits, and cancels its own runs
//   admin     everything: any run, tokens, the audit trail
//   agent     registers as its one node and reports for it; nothing else
//
// Thread-safe: free functions; TokenAuthenticator's methods may be called
// from any thread (the Store serialises its calls).
#ifndef HPCAI500_SERVER_AUTH_AUTH_H_
#define HPCAI500_SERVER_AUTH_AUTH_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/store/store.h"

namespace hpcai500 {

enum class Role { kViewer, kOperator, kAdmin, kAgent };

// "viewer", "operator", "admin", "agent".
absl::string_view RoleName(Role role);
// InvalidArgument listing the roles for any other name.
absl::StatusOr<Role> ParseRole(absl::string_view name);

// What a call does, for the permission check.
enum class Action {
  kRead,          // get, list, watch, leaderboard, nodes
  kSubmit,        // submit a run
  kChangeOwnRun,  // cancel, hold or release a run the caller submitted
  kChangeAnyRun,  // cancel, hold or release anybody's run
  kManageNodes,   // drain and resume nodes, maintenance windows
  kAudit,         // read the audit trail
  kInvalidate,    // take a result off the leaderboard
  kRegisterNode,  // an agent's stream
};

// Whether `role` may do `action`. kRegisterNode is the agent role's alone
// (and then needs the node check): an admin API token may not register a
// node, so that no token but a node's own takes a node's name (a leaked
// admin token cannot evict a node's session). Principal::any_node is the
// exception (AccessControl::Require).
bool Allows(Role role, Action action);

// Who is calling: the user and role of the token shown (or of no token when
// auth is off), and for an agent token the node it is bound to.
struct Principal {
  std::string user;
  Role role = Role::kViewer;
  std::string node;  // agent tokens only
  // Full trust: auth off, or hpcai500d's --token-file (one shared secret of
  // a private deployment, like the Slurm job's, whose agents all send it):
  // registers as any node.
  bool any_node = false;
};

// The caller when auth is off (no token exists and none is configured):
// full rights, recorded as user "local", any node.
Principal LocalPrincipal();

// A new token's text and the record to store for it.
struct NewToken {
  std::string text;  // shown once; never stored
  TokenRecord record;
};

class TokenAuthenticator {
 public:
  // Reads (or makes, mode 0600) the key file `key_path`. `store` is
  // borrowed and must outlive the authenticator.
  static absl::StatusOr<TokenAuthenticator> Open(Store* store,
                                                 const std::string& key_path);

  // The key file of the database at `db_path`.
  static std::string KeyPathFor(const std::string& db_path);

  // Makes a token for `user` (1 to 64 bytes without spaces, quotes or
  // control characters) with `role` (and, for agent tokens, the `node`:
  // required for agent, by the node-name rule registration applies,
  // common/printable.h; refused for the others) and stores its record.
  // InvalidArgument naming the field.
  absl::StatusOr<NewToken> Create(const std::string& user, Role role,
                                  const std::string& node, int64_t now_ms);

  // The principal of `token` (the text after "Bearer "). Unauthenticated
  // when it is malformed, unknown, revoked or its secret does not match;
  // the message never says which.
  absl::StatusOr<Principal> Authenticate(absl::string_view token) const;

 private:
  TokenAuthenticator(Store* store, std::string key)
      : store_(store), key_(std::move(key)) {}
  std::string Hash(absl::string_view secret) const;

  Store* store_;
  std::string key_;  // 32 bytes
};

}  // namespace hpcai500

#endif  // HPCAI500_SERVER_AUTH_AUTH_H_
