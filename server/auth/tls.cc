#include "server/auth/tls.h"

#include <grpc/grpc_security_constants.h>
#include <grpcpp/security/server_credentials.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace hpcai500 {
namespace {

std::vector<std::string> PropertyValues(const grpc::AuthContext& auth,
                                        const char* name) {
  std::vector<std::string> values;
  for (const grpc::string_ref& value : auth.FindPropertyValues(name)) {
    values.emplace_back(value.data(), value.size());
  }
  return values;
}

}  // namespace

std::shared_ptr<grpc::ServerCredentials> CoordinatorServerCredentials(
    const TlsFiles& files) {
  if (files.cert_pem.empty()) return grpc::InsecureServerCredentials();
  grpc::SslServerCredentialsOptions options(
      files.ca_pem.empty() ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
                           : GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY);
  options.pem_root_certs = files.ca_pem;
  options.pem_key_cert_pairs.push_back({files.key_pem, files.cert_pem});
  return grpc::SslServerCredentials(options);
}

std::string DescribeServerTls(const TlsFiles& files) {
  if (files.cert_pem.empty()) return "tls off: gRPC and HTTP in plaintext";
  if (files.ca_pem.empty()) {
    return "tls on for gRPC and HTTP; no client certificates asked for";
  }
  return "tls on for gRPC and HTTP; agents must present a certificate from "
         "--tls-client-ca naming their node";
}

std::vector<std::string> CertificateNames(const grpc::AuthContext& auth) {
  // gRPC sets a peer identity only for a certificate the handshake verified.
  if (!auth.IsPeerAuthenticated()) return {};
  std::vector<std::string> names =
      PropertyValues(auth, GRPC_PEER_DNS_PROPERTY_NAME);
  if (names.empty()) names = PropertyValues(auth, GRPC_X509_CN_PROPERTY_NAME);
  return names;
}

absl::Status CheckAgentCertificate(const grpc::AuthContext& auth,
                                   absl::string_view node) {
  std::vector<std::string> names = CertificateNames(auth);
  if (names.empty()) {
    return absl::UnauthenticatedError(absl::StrCat(
        "agent registering as '", node,
        "' presented no client certificate naming a node; the coordinator "
        "runs with --tls-client-ca, so agents need --tls-cert and --tls-key"));
  }
  for (const std::string& name : names) {
    if (name == node) return absl::OkStatus();
  }
  return absl::PermissionDeniedError(
      absl::StrCat("agent certificate names '", absl::StrJoin(names, "', '"),
                   "', not '", node, "' which the agent registers as"));
}

}  // namespace hpcai500
