#include "common/tls_files.h"

#include <grpcpp/security/credentials.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <memory>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/flag_file.h"
#include "common/status_macros.h"

namespace hpcai500 {
namespace {

struct BioFree {
  void operator()(BIO* bio) const { BIO_free(bio); }
};
struct X509Free {
  void operator()(X509* cert) const { X509_free(cert); }
};
struct KeyFree {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};
using UniqueBio = std::unique_ptr<BIO, BioFree>;
using UniqueX509 = std::unique_ptr<X509, X509Free>;
using UniqueKey = std::unique_ptr<EVP_PKEY, KeyFree>;

// OpenSSL's reason for the last failure on this thread ("" if none), and an
// empty error queue afterwards.
std::string TakeOpenSslError() {
  unsigned long code = ERR_peek_last_error();
  const char* reason = code == 0 ? nullptr : ERR_reason_error_string(code);
  ERR_clear_error();
  return reason == nullptr ? std::string() : absl::StrCat(" (", reason, ")");
}

// "FLAG PATH: PROBLEM", as InvalidArgument.
absl::Status BadFile(absl::string_view flag, const std::string& path,
                     absl::string_view problem) {
  return absl::InvalidArgumentError(
      absl::StrCat(flag, " ", path, ": ", problem));
}

// The file's text: ReadFlagFile's errors, or InvalidArgument when it holds
// no PEM block.
absl::StatusOr<std::string> ReadPemFile(absl::string_view flag,
                                        const std::string& path) {
  ASSIGN_OR_RETURN(std::string text,
                   ReadFlagFile(flag, path, kMaxPemFileBytes));
  if (!absl::StrContains(text, "-----BEGIN ")) {
    return BadFile(flag, path, "is not a PEM file (no -----BEGIN line)");
  }
  return text;
}

UniqueBio MemoryBio(const std::string& text) {
  return UniqueBio(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
}

// The certificates of `pem`, in order; InvalidArgument when there are none
// or one does not parse.
absl::StatusOr<std::vector<UniqueX509>> ParseCertificates(
    absl::string_view flag, const std::string& path, const std::string& pem) {
  ERR_clear_error();
  UniqueBio bio = MemoryBio(pem);
  std::vector<UniqueX509> certs;
  while (X509* cert = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
    certs.emplace_back(cert);
  }
  // The loop ends at the end of the text (PEM_R_NO_START_LINE) or at a
  // block that does not parse.
  unsigned long last = ERR_peek_last_error();
  if (last != 0 && !(ERR_GET_LIB(last) == ERR_LIB_PEM &&
                     ERR_GET_REASON(last) == PEM_R_NO_START_LINE)) {
    return BadFile(
        flag, path,
        absl::StrCat("a certificate does not parse", TakeOpenSslError()));
  }
  ERR_clear_error();
  if (certs.empty()) {
    return BadFile(flag, path, "holds no PEM certificate");
  }
  return certs;
}

absl::StatusOr<UniqueKey> ParsePrivateKey(absl::string_view flag,
                                          const std::string& path,
                                          const std::string& pem) {
  ERR_clear_error();
  UniqueBio bio = MemoryBio(pem);
  UniqueKey key(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  if (key == nullptr) {
    return BadFile(flag, path,
                   absl::StrCat("holds no unencrypted PEM private key",
                                TakeOpenSslError()));
  }
  return key;
}

// The files `flags` names, read and checked; errors name the flags (`ca_flag`
// differs between hpcai500d and its clients).
absl::StatusOr<TlsFiles> LoadTlsFiles(const TlsFileFlags& flags,
                                      absl::string_view ca_flag) {
  TlsFiles files;
  if (!flags.ca.empty()) {
    ASSIGN_OR_RETURN(files.ca_pem, ReadPemFile(ca_flag, flags.ca));
    RETURN_IF_ERROR(
        ParseCertificates(ca_flag, flags.ca, files.ca_pem).status());
  }
  if (flags.cert.empty()) return files;
  ASSIGN_OR_RETURN(files.cert_pem, ReadPemFile("--tls-cert", flags.cert));
  ASSIGN_OR_RETURN(files.key_pem, ReadPemFile("--tls-key", flags.key));
  ASSIGN_OR_RETURN(std::vector<UniqueX509> chain,
                   ParseCertificates("--tls-cert", flags.cert, files.cert_pem));
  ASSIGN_OR_RETURN(UniqueKey key,
                   ParsePrivateKey("--tls-key", flags.key, files.key_pem));
  if (X509_check_private_key(chain.front().get(), key.get()) != 1) {
    ERR_clear_error();
    return BadFile("--tls-key", flags.key,
                   absl::StrCat("is not the key of the certificate in "
                                "--tls-cert ",
                                flags.cert));
  }
  return files;
}

// --tls-cert and --tls-key: both or neither.
absl::Status CheckKeyPairFlags(const TlsFileFlags& flags) {
  if (!flags.cert.empty() && flags.key.empty()) {
    return absl::InvalidArgumentError("--tls-cert needs --tls-key");
  }
  if (flags.cert.empty() && !flags.key.empty()) {
    return absl::InvalidArgumentError("--tls-key needs --tls-cert");
  }
  return absl::OkStatus();
}

}  // namespace

void AddServerTlsFlags(CLI::App& app, TlsFileFlags* flags) {
  AddValueFlag(app, "tls-cert", &flags->cert);
  AddValueFlag(app, "tls-key", &flags->key);
  AddValueFlag(app, "tls-client-ca", &flags->ca);
}

void AddClientTlsFlags(CLI::App& app, TlsFileFlags* flags,
                       bool with_client_certificate) {
  AddValueFlag(app, "tls-ca", &flags->ca);
  if (with_client_certificate) {
    AddValueFlag(app, "tls-cert", &flags->cert);
    AddValueFlag(app, "tls-key", &flags->key);
  }
}

absl::StatusOr<TlsFiles> LoadServerTlsFiles(const TlsFileFlags& flags) {
  RETURN_IF_ERROR(CheckKeyPairFlags(flags));
  if (!flags.ca.empty() && flags.cert.empty()) {
    return absl::InvalidArgumentError(
        "--tls-client-ca needs --tls-cert and --tls-key (client certificates "
        "are only asked for over TLS)");
  }
  return LoadTlsFiles(flags, "--tls-client-ca");
}

absl::StatusOr<TlsFiles> LoadClientTlsFiles(const TlsFileFlags& flags) {
  RETURN_IF_ERROR(CheckKeyPairFlags(flags));
  if (!flags.cert.empty() && flags.ca.empty()) {
    return absl::InvalidArgumentError(
        "--tls-cert needs --tls-ca (a client certificate is only sent over "
        "TLS)");
  }
  return LoadTlsFiles(flags, "--tls-ca");
}

std::shared_ptr<grpc::ChannelCredentials> CoordinatorChannelCredentials(
    const TlsFiles& files) {
  if (files.ca_pem.empty()) return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions options;
  options.pem_root_certs = files.ca_pem;
  options.pem_cert_chain = files.cert_pem;
  options.pem_private_key = files.key_pem;
  return grpc::SslCredentials(options);
}

}  // namespace hpcai500
