// A site's signing key (Ed25519 through OpenSSL) and the digests a result
// bundle lists (SHA-256). The public key, as 64 lowercase hex digits, is
// the site's identity: bundles are signed with the private key, which stays
// in the coordinator's state directory (`hpcai500d site-key create`), and
// anyone can check a signature with the public key alone.
//
// Thread-safe: SiteKey is immutable after construction; free functions.
#ifndef HPCAI500_METHODOLOGY_SITE_KEY_H_
#define HPCAI500_METHODOLOGY_SITE_KEY_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

typedef struct evp_pkey_st EVP_PKEY;

namespace hpcai500 {

// SHA-256 of `data` as 64 lowercase hex digits.
std::string Sha256Hex(absl::string_view data);

class SiteKey {
 public:
  // A new random key.
  static absl::StatusOr<SiteKey> Generate();
  // The key in `pem` (PKCS#8, as ToPem writes it). InvalidArgument when it
  // is not an Ed25519 private key.
  static absl::StatusOr<SiteKey> FromPem(absl::string_view pem);

  // The private key as PKCS#8 PEM: what the key file holds.
  std::string ToPem() const;
  // The public key: 64 lowercase hex digits.
  std::string PublicKeyHex() const;
  // The Ed25519 signature of `message`: 128 lowercase hex digits.
  absl::StatusOr<std::string> Sign(absl::string_view message) const;

 private:
  explicit SiteKey(EVP_PKEY* key);
  struct Free {
    void operator()(EVP_PKEY* key) const;
  };
  std::shared_ptr<EVP_PKEY> key_;
};

// OK when `signature_hex` is the Ed25519 signature of `message` by the key
// `public_key_hex`; InvalidArgument naming what does not hold (a malformed
// key or signature, or a signature that does not match).
absl::Status VerifySignature(absl::string_view public_key_hex,
                             absl::string_view message,
                             absl::string_view signature_hex);

// Whether `text` is `digits` lowercase hex digits.
bool IsLowerHex(absl::string_view text, size_t digits);

}  // namespace hpcai500

#endif  // HPCAI500_METHODOLOGY_SITE_KEY_H_
