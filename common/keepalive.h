// The keepalive agreement of hpcai500d and its agents, in one place for both
// ends: an agent (and a bench that connects as many) pings every 10 s, also
// while no call runs, and gives up 5 s after a ping goes unanswered;
// hpcai500d pings its agents as often and accepts their pings down to every
// 5 s without data. Either end so finds a silent peer (a stopped process, a
// cut link) whose TCP connection still looks open. Both ends turn HTTP/2's
// BDP probe off: its pings size windows for bulk transfers, and an agent
// stream carries small messages.
//
// Thread-safe: each call touches only its argument.
#ifndef HPCAI500_COMMON_KEEPALIVE_H_
#define HPCAI500_COMMON_KEEPALIVE_H_

#include <grpcpp/grpcpp.h>

namespace hpcai500 {

// How long hpcai500d keeps a gRPC connection with no call open, by default
// (hpcai500d --grpc-idle-timeout-s).
inline constexpr int kDefaultGrpcIdleTimeoutS = 300;

// The agent's side, on the arguments of its channel to the coordinator.
void SetAgentKeepalive(grpc::ChannelArguments& args);

// The coordinator's side, on the builder of its gRPC server; it also
// closes a connection that had no call open for `idle_ms` (a client that
// connected and went quiet holds a descriptor and memory for nothing;
// keepalive pings alone keep no connection).
void SetCoordinatorKeepalive(grpc::ServerBuilder& builder, int idle_ms);

}  // namespace hpcai500

#endif  // HPCAI500_COMMON_KEEPALIVE_H_
