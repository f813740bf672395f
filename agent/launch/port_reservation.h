// Phase one of the rendezvous: hold a free TCP port on this node's address
// until rank 0's worker is about to start and host its TCPStore there.
//
// Not thread-safe; move-only. The socket closes on Release() or destruction.
#ifndef HPCAI500_AGENT_LAUNCH_PORT_RESERVATION_H_
#define HPCAI500_AGENT_LAUNCH_PORT_RESERVATION_H_

#include <string>

#include "absl/status/statusor.h"

namespace hpcai500::agent {

class PortReservation {
 public:
  // Binds a TCP socket to port 0 of address (an IPv4/IPv6 literal or a name
  // that resolves to one) and keeps it bound, not listening. Returns
  // Unavailable naming the address when nothing can be bound.
  static absl::StatusOr<PortReservation> Reserve(const std::string& address);

  PortReservation(PortReservation&& other) noexcept;
  PortReservation& operator=(PortReservation&& other) noexcept;
  PortReservation(const PortReservation&) = delete;
  PortReservation& operator=(const PortReservation&) = delete;
  ~PortReservation();

  int port() const { return port_; }

  // Frees the port (just before the worker that will bind it starts).
  void Release();

 private:
  PortReservation(int fd, int port) : fd_(fd), port_(port) {}

  int fd_ = -1;
  int port_ = 0;
};

}  // namespace hpcai500::agent

#endif  // HPCAI500_AGENT_LAUNCH_PORT_RESERVATION_H_
