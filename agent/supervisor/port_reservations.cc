// The rendezvous ports held between PHASE_RESERVE and the start.
#include "agent/supervisor/port_reservations.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "agent/attempts/attempt_checkpoints.h"
#include "agent/attempts/where.h"
#include "agent/launch/assignment.h"
#include "common/log.h"

namespace hpcai500::agent {

PortReservations::PortReservations(std::string address,
                                   std::string checkpoint_root)
    : address_(std::move(address)),
      checkpoint_root_(std::move(checkpoint_root)) {}

v1::AgentMessage PortReservations::Reserve(const v1::Assignment& a) {
  v1::AgentMessage reply;
  v1::PortReserved* reserved = reply.mutable_port_reserved();
  *reserved->mutable_key() = a.key();
  reserved->set_host(address_);
  if (absl::Status valid = ValidateAttemptKey(a.key()); !valid.ok()) {
    reserved->set_error(std::string(valid.message()));
    LogError(absl::StrCat("refused port reservation: ", valid.message()));
    return reply;
  }
  AddFoundCheckpoints(checkpoint_root_, a, reserved);
  auto existing = ports_.find(IdOf(a.key()));
  if (existing != ports_.end()) {
    reserved->set_port(existing->second.port());
    return reply;
  }
  absl::StatusOr<PortReservation> port = PortReservation::Reserve(address_);
  if (!port.ok()) {
    reserved->set_error(std::string(port.status().message()));
    LogError(absl::StrCat(Where(a.key()), ": ", port.status().message()));
    return reply;
  }
  reserved->set_port(port->port());
  LogInfo(absl::StrCat(Where(a.key()), ": reserved rendezvous port ",
                       port->port(), " on ", address_));
  ports_.emplace(IdOf(a.key()), *std::move(port));
  return reply;
}

void PortReservations::Release(const v1::AttemptKey& key) {
  ports_.erase(IdOf(key));
}

void PortReservations::ReleaseAll() { ports_.clear(); }

}  // namespace hpcai500::agent
