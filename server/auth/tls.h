// TLS on the coordinator's gRPC port: the server credentials made from
// hpcai500d's --tls-* files, and the rule that binds an agent's client
// certificate to the node name it registers as.
//
// With --tls-client-ca the port requests a client certificate and verifies
// any that is presented against that CA (a certificate it did not sign fails
// the handshake), but lets clients without one in: the CLI needs none, its
// calls are authorized by the bearer token as without TLS. AgentService.Connect
// then refuses an agent that presented no certificate, or one that does not
// name the node it registers as (CheckAgentCertificate).
//
// Thread-safe: free functions.
#ifndef HPCAI500_SERVER_AUTH_TLS_H_
#define HPCAI500_SERVER_AUTH_TLS_H_

#include <grpcpp/security/auth_context.h>
#include <grpcpp/security/server_credentials.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "common/tls_files.h"

namespace hpcai500 {

// Plaintext when files.cert_pem is empty; otherwise TLS with that chain and
// key, and with files.ca_pem (--tls-client-ca) set, requesting (not
// requiring) client certificates and verifying them against it.
std::shared_ptr<grpc::ServerCredentials> CoordinatorServerCredentials(
    const TlsFiles& files);

// One line for the start-up log: whether TLS is on and whether agents must
// present certificates.
std::string DescribeServerTls(const TlsFiles& files);

// The names the peer's verified certificate vouches for: its DNS subject
// alternative names, or its subject common name when it has none (as in RFC
// 6125). Empty when the peer presented no certificate.
std::vector<std::string> CertificateNames(const grpc::AuthContext& auth);

// OK when the peer's verified certificate names `node` (one of
// CertificateNames, compared exactly). UNAUTHENTICATED when the peer
// presented no certificate; PERMISSION_DENIED naming the certificate's names
// and `node` when it names other nodes.
absl::Status CheckAgentCertificate(const grpc::AuthContext& auth,
                                   absl::string_view node);

}  // namespace hpcai500

#endif  // HPCAI500_SERVER_AUTH_TLS_H_
