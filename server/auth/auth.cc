#include "server/auth/auth.h"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/printable.h"
#include "common/status_macros.h"

namespace hpcai500 {
namespace {

constexpr absl::string_view kTokenPrefix = "hai5_";
constexpr size_t kIdBytes = 8;       // 16 hex digits
constexpr size_t kSecretBytes = 32;  // 64 hex digits
constexpr size_t kKeyBytes = 32;

absl::StatusOr<std::string> RandomBytes(size_t n) {
  std::string bytes(n, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(bytes.data()),
                 static_cast<int>(n)) != 1) {
    return absl::InternalError("no random bytes from OpenSSL");
  }
  return bytes;
}

bool IsLowerHex(absl::string_view text) {
  for (char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

absl::Status Unauthenticated() {
  return absl::UnauthenticatedError("unknown, revoked or malformed token");
}

// Reads the key file, or makes it (0600) when absent.
absl::StatusOr<std::string> ReadOrMakeKey(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT) {
    ASSIGN_OR_RETURN(std::string key, RandomBytes(kKeyBytes));
    fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd >= 0) {
      const bool written = ::write(fd, key.data(), key.size()) ==
                               static_cast<ssize_t>(key.size()) &&
                           ::fsync(fd) == 0;
      ::close(fd);
      if (!written) {
        return absl::UnavailableError(
            absl::StrCat("token key ", path, ": cannot write it"));
      }
      return key;
    }
    if (errno != EEXIST) {
      return absl::UnavailableError(absl::StrCat(
          "token key ", path, ": cannot create it: ", std::strerror(errno)));
    }
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);  // made meanwhile
  }
  if (fd < 0) {
    return absl::UnavailableError(absl::StrCat(
        "token key ", path, ": cannot read it: ", std::strerror(errno)));
  }
  std::string key(kKeyBytes + 1, '\0');
  const ssize_t n = ::read(fd, key.data(), key.size());
  ::close(fd);
  if (n != static_cast<ssize_t>(kKeyBytes)) {
    return absl::DataLossError(
        absl::StrCat("token key ", path, ": must hold ", kKeyBytes, " bytes"));
  }
  key.resize(kKeyBytes);
  return key;
}

}  // namespace

absl::string_view RoleName(Role role) {
  switch (role) {
    case Role::kViewer:
      return "viewer";
    case Role::kOperator:
      return "operator";
    case Role::kAdmin:
      return "admin";
    case Role::kAgent:
      return "agent";
  }
  return "viewer";
}

absl::StatusOr<Role> ParseRole(absl::string_view name) {
  for (Role role :
       {Role::kViewer, Role::kOperator, Role::kAdmin, Role::kAgent}) {
    if (name == RoleName(role)) return role;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("role: must be one of viewer, operator, admin, agent; "
                   "got '",
                   name.substr(0, 40), "'"));
}

bool Allows(Role role, Action action) {
  switch (role) {
    case Role::kAdmin:
      return action != Action::kRegisterNode;
    case Role::kOperator:
      return action == Action::kRead || action == Action::kSubmit ||
             action == Action::kChangeOwnRun;
    case Role::kViewer:
      return action == Action::kRead;
    case Role::kAgent:
      return action == Action::kRegisterNode;
  }
  return false;
}

Principal LocalPrincipal() {
  return Principal{"local", Role::kAdmin, "", /*any_node=*/true};
}

std::string TokenAuthenticator::KeyPathFor(const std::string& db_path) {
  return TokenKeyPath(db_path);
}

absl::StatusOr<TokenAuthenticator> TokenAuthenticator::Open(
    Store* store, const std::string& key_path) {
  ASSIGN_OR_RETURN(std::string key, ReadOrMakeKey(key_path));
  return TokenAuthenticator(store, std::move(key));
}

std::string TokenAuthenticator::Hash(absl::string_view secret) const {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  HMAC(EVP_sha256(), key_.data(), static_cast<int>(key_.size()),
       reinterpret_cast<const unsigned char*>(secret.data()), secret.size(),
       digest, &length);
  return std::string(reinterpret_cast<const char*>(digest), length);
}

absl::StatusOr<NewToken> TokenAuthenticator::Create(const std::string& user,
                                                    Role role,
                                                    const std::string& node,
                                                    int64_t now_ms) {
  // The node first: an agent token's user defaults to agent-NODE.
  if (role == Role::kAgent && node.empty()) {
    return absl::InvalidArgumentError(
        "node: an agent token is bound to one node: give --node NAME");
  }
  if (role != Role::kAgent && !node.empty()) {
    return absl::InvalidArgumentError("node: only agent tokens take --node");
  }
  // The name registration takes (common/printable.h): a token for any
  // other could never register.
  if (role == Role::kAgent && !IsNodeName(node)) {
    return absl::InvalidArgumentError(
        absl::StrCat("node: '", EscapeLine(node.substr(0, 80)), "' must be ",
                     kNodeNameRule));
  }
  if (user.empty() || user.size() > 64 || HasControlCharacter(user) ||
      user.find_first_of(" \"'") != std::string::npos) {
    return absl::InvalidArgumentError(
        "user: must be 1 to 64 characters without spaces, quotes or control "
        "characters");
  }
  ASSIGN_OR_RETURN(std::string id_bytes, RandomBytes(kIdBytes));
  ASSIGN_OR_RETURN(std::string secret_bytes, RandomBytes(kSecretBytes));
  const std::string id = absl::BytesToHexString(id_bytes);
  const std::string secret = absl::BytesToHexString(secret_bytes);
  NewToken token;
  token.text = absl::StrCat(kTokenPrefix, id, "_", secret);
  token.record.id = id;
  token.record.user = user;
  token.record.role = std::string(RoleName(role));
  token.record.node = node;
  token.record.hash = Hash(secret);
  token.record.created_ms = now_ms;
  RETURN_IF_ERROR(store_->SaveToken(token.record));
  return token;
}

absl::StatusOr<Principal> TokenAuthenticator::Authenticate(
    absl::string_view token) const {
  if (!absl::StartsWith(token, kTokenPrefix)) return Unauthenticated();
  token.remove_prefix(kTokenPrefix.size());
  const size_t underscore = token.find('_');
  if (underscore != kIdBytes * 2 ||
      token.size() != underscore + 1 + kSecretBytes * 2) {
    return Unauthenticated();
  }
  const absl::string_view id = token.substr(0, underscore);
  const absl::string_view secret = token.substr(underscore + 1);
  if (!IsLowerHex(id) || !IsLowerHex(secret)) return Unauthenticated();
  ASSIGN_OR_RETURN(std::optional<TokenRecord> record,
                   store_->FindToken(std::string(id)));
  if (!record.has_value() || record->revoked_ms != 0) return Unauthenticated();
  const std::string hash = Hash(secret);
  if (record->hash.size() != hash.size() ||
      CRYPTO_memcmp(record->hash.data(), hash.data(), hash.size()) != 0) {
    return Unauthenticated();
  }
  ASSIGN_OR_RETURN(Role role, ParseRole(record->role));
  return Principal{record->user, role, record->node};
}

}  // namespace hpcai500
