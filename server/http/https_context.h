// The OpenSSL context HttpServer serves HTTPS with: TLS 1.2 or newer, one
// certificate chain and its private key, no client certificates (browsers
// and curl read the leaderboard; writes are authorized by the bearer token).
//
// Thread-safe: a free function.
#ifndef HPCAI500_SERVER_HTTP_HTTPS_CONTEXT_H_
#define HPCAI500_SERVER_HTTP_HTTPS_CONTEXT_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "boost/asio/ssl/context.hpp"

namespace hpcai500 {

// A server context for `cert_chain_pem` (leaf first) and `private_key_pem`
// (PEM text, e.g. as common/tls_files.h loads them). InvalidArgument with
// OpenSSL's reason when either does not load or the key is not the leaf's.
absl::StatusOr<std::unique_ptr<boost::asio::ssl::context>> NewHttpsContext(
    const std::string& cert_chain_pem, const std::string& private_key_pem);

}  // namespace hpcai500

#endif  // HPCAI500_SERVER_HTTP_HTTPS_CONTEXT_H_
