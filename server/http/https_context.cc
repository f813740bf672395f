#include "server/http/https_context.h"

#include "absl/strings/str_cat.h"
#include "boost/asio/buffer.hpp"

namespace hpcai500 {

namespace ssl = boost::asio::ssl;

absl::StatusOr<std::unique_ptr<ssl::context>> NewHttpsContext(
    const std::string& cert_chain_pem, const std::string& private_key_pem) {
  auto context = std::make_unique<ssl::context>(ssl::context::tls_server);
  boost::system::error_code error;
  context->set_options(ssl::context::default_workarounds |
                           ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                           ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1 |
                           ssl::context::single_dh_use,
                       error);
  if (error) {
    return absl::InvalidArgumentError(
        absl::StrCat("HTTPS: cannot set TLS options: ", error.message()));
  }
  context->use_certificate_chain(boost::asio::buffer(cert_chain_pem), error);
  if (error) {
    return absl::InvalidArgumentError(absl::StrCat(
        "HTTPS: the certificate chain does not load: ", error.message()));
  }
  context->use_private_key(boost::asio::buffer(private_key_pem),
                           ssl::context::pem, error);
  if (error) {
    return absl::InvalidArgumentError(absl::StrCat(
        "HTTPS: the private key does not load or does not match the "
        "certificate: ",
        error.message()));
  }
  return context;
}

}  // namespace hpcai500
