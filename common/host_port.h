// The one rule for a HOST:PORT that hpcai500d listens on (--grpc, --http):
// "HOST:PORT" or "[IPv6]:PORT", a host, and a port from 0 (any free one)
// to 65535, so that a port out of range is refused at the flag instead of
// wrapping around (99999 listened on 34463) or meaning "any".
//
// Thread-safe: a pure function.
#ifndef HPCAI500_COMMON_HOST_PORT_H_
#define HPCAI500_COMMON_HOST_PORT_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace hpcai500 {

struct HostPort {
  std::string host;  // without an IPv6 address's brackets
  int port = 0;
};

// `text` split and checked. InvalidArgument "bad address 'TEXT': WHY
// (expected HOST:PORT, e.g. 127.0.0.1:7500)" without a host, without a
// port, with an unterminated IPv6 address or a port that is not a number
// from 0 to 65535.
absl::StatusOr<HostPort> ParseHostPort(absl::string_view text);

// Whether a listener could bind `address` now: binds a socket there (as a
// listener would, SO_REUSEADDR) and closes it. Unavailable "cannot listen
// there: WHY" when a process listens there already or the host is not
// this machine's; OK for port 0. A check before anything is created (a
// database), so that a refused start leaves nothing behind; the listener
// itself may still fail in a race.
absl::Status CheckCanListen(const HostPort& address);

}  // namespace hpcai500

#endif  // HPCAI500_COMMON_HOST_PORT_H_
