#include "common/host_port.h"

#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/printable.h"

namespace hpcai500 {

absl::StatusOr<HostPort> ParseHostPort(absl::string_view text) {
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bad address '", EscapeLine(std::string(text.substr(0, 300))),
        "': ", why, " (expected HOST:PORT, e.g. 127.0.0.1:7500)"));
  };
  HostPort result;
  size_t colon;
  if (!text.empty() && text.front() == '[') {
    const size_t close = text.find(']');
    if (close == absl::string_view::npos || close + 1 >= text.size() ||
        text[close + 1] != ':') {
      return bad("unterminated IPv6 address");
    }
    result.host = std::string(text.substr(1, close - 1));
    colon = close + 1;
  } else {
    colon = text.rfind(':');
    if (colon == absl::string_view::npos) return bad("no port");
    result.host = std::string(text.substr(0, colon));
  }
  if (result.host.empty()) return bad("no host");
  const absl::string_view port = text.substr(colon + 1);
  // SimpleAtoi takes "+80" and " 80"; a port is digits only.
  const bool digits =
      !port.empty() && port.size() <= 5 &&
      std::all_of(port.begin(), port.end(), [](char c) {
        return absl::ascii_isdigit(static_cast<unsigned char>(c));
      });
  if (!digits || !absl::SimpleAtoi(port, &result.port) || result.port > 65535) {
    return bad("port must be a number from 0 to 65535");
  }
  return result;
}

absl::Status CheckCanListen(const HostPort& address) {
  if (address.port == 0) return absl::OkStatus();
  addrinfo hints = {};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(address.port);
  if (const int rc =
          ::getaddrinfo(address.host.c_str(), port.c_str(), &hints, &found);
      rc != 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen there: ", ::gai_strerror(rc)));
  }
  int error = 0;
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    const int fd =
        ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      error = errno;
      continue;
    }
    const int on = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
    const bool bound = ::bind(fd, a->ai_addr, a->ai_addrlen) == 0;
    error = bound ? 0 : errno;
    ::close(fd);
    if (bound) break;
  }
  ::freeaddrinfo(found);
  if (error == 0) return absl::OkStatus();
  return absl::UnavailableError(
      absl::StrCat("cannot listen there: ", std::strerror(error)));
}

}  // namespace hpcai500
