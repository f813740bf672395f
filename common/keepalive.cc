#include "common/keepalive.h"

namespace hpcai500 {
namespace {

constexpr int kPingEveryMs = 10'000;
constexpr int kPingTimeoutMs = 5'000;
constexpr int kMinPingIntervalMs = 5'000;

// HTTP/2's BDP probe pings the peer after data arrives to size the window
// for bulk transfers; an agent stream carries small messages only, and at
// 4,000 agents those pings and their acks were a quarter of hpcai500d's CPU.
constexpr int kBdpProbe = 0;

}  // namespace

void SetAgentKeepalive(grpc::ChannelArguments& args) {
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, kPingEveryMs);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, kPingTimeoutMs);
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  args.SetInt(GRPC_ARG_HTTP2_BDP_PROBE, kBdpProbe);
}

void SetCoordinatorKeepalive(grpc::ServerBuilder& builder, int idle_ms) {
  builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS, idle_ms);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, kPingEveryMs);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, kPingTimeoutMs);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(
      GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS,
      kMinPingIntervalMs);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_BDP_PROBE, kBdpProbe);
}

}  // namespace hpcai500
