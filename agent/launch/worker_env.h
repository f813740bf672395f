// Which of the agent's environment variables a worker inherits: an
// allowlist, so that credentials and other secrets of the agent's session
// (AWS_SECRET_ACCESS_KEY, tokens, ...) never reach a benchmark process.
//
// Passed: PATH, HOME, LANG, LC_*, TZ, LD_LIBRARY_PATH; every NCCL_*, GLOO_*,
// OMPI_MCA_*, UCX_* and CUDA_* variable; and the names the operator lists
// with --env. With --iface, GLOO_SOCKET_IFNAME and NCCL_SOCKET_IFNAME name
// that interface (over the agent's own). The rank layout (RANK, WORLD_SIZE,
// MASTER_ADDR, ...) is put over this per rank (agent/launch/assignment.h).
//
// Thread-safe: free functions.
#ifndef HPCAI500_AGENT_LAUNCH_WORKER_ENV_H_
#define HPCAI500_AGENT_LAUNCH_WORKER_ENV_H_

#include <array>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace hpcai500::agent {

// The variables --iface sets: the interface Gloo and NCCL bind to.
inline constexpr std::array<absl::string_view, 2> kInterfaceEnvNames = {
    "GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME"};

// Whether `name` is one of kInterfaceEnvNames.
bool IsInterfaceEnvName(absl::string_view name);

// "NAME=iface" for each of kInterfaceEnvNames; none when `iface` is empty.
std::vector<std::string> InterfaceEnv(const std::string& iface);

// Whether `name` can name an environment variable for --env:
// [A-Za-z_][A-Za-z0-9_]*.
bool IsEnvName(absl::string_view name);

// Whether a variable named `name` passes the built-in allowlist (without
// --env names).
bool IsAllowedWorkerEnvName(absl::string_view name);

// The entries of `agent_env` ("K=V", in their order) that a worker inherits:
// the allowlist above plus the variables named in `extra_names` (values are
// the agent's own; a name the agent lacks is left out). When `iface` is not
// empty, GLOO_SOCKET_IFNAME=iface and NCCL_SOCKET_IFNAME=iface replace any
// the agent has. Entries without '=' are dropped. Touches nothing.
std::vector<std::string> WorkerBaseEnv(
    const std::vector<std::string>& agent_env,
    const std::vector<std::string>& extra_names, const std::string& iface);

}  // namespace hpcai500::agent

#endif  // HPCAI500_AGENT_LAUNCH_WORKER_ENV_H_
