// TLS from the command line: the --tls-* flags of hpcai500d, hpcai500-agent
// and the hpcai500 CLI, one reader that turns their PEM files into checked
// text (so a wrong file is named at start-up, not as a failed handshake
// later), and the channel credentials the agent and the CLI dial with.
//
// Thread-safe: free functions.
#ifndef HPCAI500_COMMON_TLS_FILES_H_
#define HPCAI500_COMMON_TLS_FILES_H_

#include <grpcpp/security/credentials.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/flags.h"

namespace hpcai500 {

// A PEM file larger than this is a wrong file, not a certificate or a key.
inline constexpr size_t kMaxPemFileBytes = 1024 * 1024;

// The paths a command line gave; empty: not given.
struct TlsFileFlags {
  std::string ca;    // --tls-ca (agent, CLI) or --tls-client-ca (hpcai500d)
  std::string cert;  // --tls-cert: a certificate chain, leaf first
  std::string key;   // --tls-key: the leaf's private key
};

// The files' PEM text, each checked to parse (and the key to match the
// certificate); empty where the flag was not given.
struct TlsFiles {
  std::string ca_pem;
  std::string cert_pem;
  std::string key_pem;
};

// Adds --tls-cert, --tls-key and --tls-client-ca (hpcai500d) into *flags,
// borrowed for the life of `app`.
void AddServerTlsFlags(CLI::App& app, TlsFileFlags* flags);

// Adds --tls-ca and, with `with_client_certificate` (the agent), --tls-cert
// and --tls-key into *flags, borrowed for the life of `app`.
void AddClientTlsFlags(CLI::App& app, TlsFileFlags* flags,
                       bool with_client_certificate);

// The files of hpcai500d's flags: --tls-cert and --tls-key both or neither,
// --tls-client-ca only with them. InvalidArgument naming the flag for a
// missing partner, a file that is not PEM, a certificate or key that does not
// parse or a key that does not match; NotFound naming flag and path for a
// file that cannot be read.
absl::StatusOr<TlsFiles> LoadServerTlsFiles(const TlsFileFlags& flags);

// The files of the agent's or the CLI's flags: --tls-cert and --tls-key both
// or neither, and only with --tls-ca. Errors as LoadServerTlsFiles.
absl::StatusOr<TlsFiles> LoadClientTlsFiles(const TlsFileFlags& flags);

// How the agent and the CLI dial the coordinator: plaintext without a CA;
// otherwise TLS trusting only files.ca_pem (the coordinator's name is checked
// against the host of the address dialled), presenting cert_pem/key_pem when
// given.
std::shared_ptr<grpc::ChannelCredentials> CoordinatorChannelCredentials(
    const TlsFiles& files);

}  // namespace hpcai500

#endif  // HPCAI500_COMMON_TLS_FILES_H_
