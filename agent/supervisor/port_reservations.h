// PortReservations: PHASE_RESERVE on this node. For each attempt about to
// start it holds one rendezvous port on the node's address
// (agent/launch/port_reservation.h) until rank 0's worker is about to bind
// it, and answers with the port and the checkpoints an earlier attempt left
// (AddFoundCheckpoints). A repeated reservation gets the same port.
//
// Not thread-safe: the Supervisor's thread drives it.
#ifndef HPCAI500_AGENT_SUPERVISOR_PORT_RESERVATIONS_H_
#define HPCAI500_AGENT_SUPERVISOR_PORT_RESERVATIONS_H_

#include <map>
#include <string>

#include "agent/launch/port_reservation.h"
#include "agent/supervisor/supervised_attempt.h"
#include "proto/hpcai500.pb.h"

namespace hpcai500::agent {

class PortReservations {
 public:
  // `address`: this node's, where the ports are held; `checkpoint_root`:
  // where earlier attempts' checkpoints are looked for.
  PortReservations(std::string address, std::string checkpoint_root);

  // The PortReserved answer to `a` (a PHASE_RESERVE): its port, or the
  // error of a bad key or of a port that cannot be held.
  v1::AgentMessage Reserve(const v1::Assignment& a);

  // Frees the port of attempt `key`, if one is held.
  void Release(const v1::AttemptKey& key);
  // Frees every port held.
  void ReleaseAll();

 private:
  // Constant after construction.
  const std::string address_;
  const std::string checkpoint_root_;

  std::map<AttemptId, PortReservation> ports_;
};

}  // namespace hpcai500::agent

#endif  // HPCAI500_AGENT_SUPERVISOR_PORT_RESERVATIONS_H_
