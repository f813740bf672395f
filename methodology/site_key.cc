// Ed25519 site keys and SHA-256 digests over OpenSSL's EVP: see site_key.h.
#include "methodology/site_key.h"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"

namespace hpcai500 {
namespace {

constexpr size_t kPublicKeyBytes = 32;
constexpr size_t kSignatureBytes = 64;

using DigestContext = std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)>;

std::string Hex(const unsigned char* bytes, size_t size) {
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(bytes), size));
}

}  // namespace

bool IsLowerHex(absl::string_view text, size_t digits) {
  if (text.size() != digits) return false;
  for (char c : text) {
    if (!absl::ascii_isdigit(c) && (c < 'a' || c > 'f')) return false;
  }
  return true;
}

std::string Sha256Hex(absl::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_Digest(data.data(), data.size(), digest, &size, EVP_sha256(), nullptr);
  return Hex(digest, size);
}

void SiteKey::Free::operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }

SiteKey::SiteKey(EVP_PKEY* key) : key_(key, Free()) {}

absl::StatusOr<SiteKey> SiteKey::Generate() {
  std::unique_ptr<EVP_PKEY_CTX, decltype(&EVP_PKEY_CTX_free)> context(
      EVP_PKEY_CTX_new_id(EVP_PKEY_ED25519, nullptr), &EVP_PKEY_CTX_free);
  EVP_PKEY* key = nullptr;
  if (context == nullptr || EVP_PKEY_keygen_init(context.get()) != 1 ||
      EVP_PKEY_keygen(context.get(), &key) != 1) {
    return absl::InternalError("OpenSSL: Ed25519 key generation failed");
  }
  return SiteKey(key);
}

absl::StatusOr<SiteKey> SiteKey::FromPem(absl::string_view pem) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(
      BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), &BIO_free);
  EVP_PKEY* key = bio == nullptr ? nullptr
                                 : PEM_read_bio_PrivateKey(bio.get(), nullptr,
                                                           nullptr, nullptr);
  if (key == nullptr) {
    return absl::InvalidArgumentError("not a PEM private key");
  }
  if (EVP_PKEY_id(key) != EVP_PKEY_ED25519) {
    EVP_PKEY_free(key);
    return absl::InvalidArgumentError("not an Ed25519 key");
  }
  return SiteKey(key);
}

std::string SiteKey::ToPem() const {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new(BIO_s_mem()),
                                                &BIO_free);
  PEM_write_bio_PrivateKey(bio.get(), key_.get(), nullptr, nullptr, 0, nullptr,
                           nullptr);
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(size));
}

std::string SiteKey::PublicKeyHex() const {
  unsigned char raw[kPublicKeyBytes];
  size_t size = sizeof(raw);
  EVP_PKEY_get_raw_public_key(key_.get(), raw, &size);
  return Hex(raw, size);
}

absl::StatusOr<std::string> SiteKey::Sign(absl::string_view message) const {
  DigestContext context(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  unsigned char signature[kSignatureBytes];
  size_t size = sizeof(signature);
  if (context == nullptr ||
      EVP_DigestSignInit(context.get(), nullptr, nullptr, nullptr,
                         key_.get()) != 1 ||
      EVP_DigestSign(context.get(), signature, &size,
                     reinterpret_cast<const unsigned char*>(message.data()),
                     message.size()) != 1) {
    return absl::InternalError("OpenSSL: Ed25519 signing failed");
  }
  return Hex(signature, size);
}

absl::Status VerifySignature(absl::string_view public_key_hex,
                             absl::string_view message,
                             absl::string_view signature_hex) {
  if (!IsLowerHex(public_key_hex, 2 * kPublicKeyBytes)) {
    return absl::InvalidArgumentError(
        "the site key is not 64 lowercase hex digits");
  }
  if (!IsLowerHex(signature_hex, 2 * kSignatureBytes)) {
    return absl::InvalidArgumentError(
        "the signature is not 128 lowercase hex digits");
  }
  const std::string raw_key = absl::HexStringToBytes(public_key_hex);
  const std::string raw_signature = absl::HexStringToBytes(signature_hex);
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(
      EVP_PKEY_new_raw_public_key(
          EVP_PKEY_ED25519, nullptr,
          reinterpret_cast<const unsigned char*>(raw_key.data()),
          raw_key.size()),
      &EVP_PKEY_free);
  if (key == nullptr) {
    return absl::InvalidArgumentError("the site key is not an Ed25519 key");
  }
  DigestContext context(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  if (context == nullptr ||
      EVP_DigestVerifyInit(context.get(), nullptr, nullptr, nullptr,
                           key.get()) != 1 ||
      EVP_DigestVerify(
          context.get(),
          reinterpret_cast<const unsigned char*>(raw_signature.data()),
          raw_signature.size(),
          reinterpret_cast<const unsigned char*>(message.data()),
          message.size()) != 1) {
    return absl::InvalidArgumentError(
        "the signature does not match the manifest and the site key");
  }
  return absl::OkStatus();
}

}  // namespace hpcai500
