// The agent's command line and the node inventory defaults behind it.
//
// Thread-safe: free functions.
#ifndef HPCAI500_AGENT_OPTIONS_H_
#define HPCAI500_AGENT_OPTIONS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/tls_files.h"
#include "proto/hpcai500.pb.h"

namespace hpcai500::agent {

struct AgentOptions {
  std::string coordinator;  // HOST:PORT
  std::string name;         // node name
  int slots = 0;            // ranks this node hosts
  std::string workdir;      // absolute
  // --address: where other nodes reach this one (rank 0's rendezvous);
  // default the --iface interface's IPv4 address, else 127.0.0.1.
  std::string address = "127.0.0.1";
  // --iface NAME: the network interface workers' Gloo and NCCL bind to
  // (GLOO_SOCKET_IFNAME, NCCL_SOCKET_IFNAME); empty: their own choice.
  std::string iface;
  // --env NAME: further variables of the agent's environment that workers
  // inherit beyond the allowlist of agent/launch/worker_env.h.
  std::vector<std::string> worker_env_names;
  std::string worker_path;
  std::map<std::string, std::string> labels;
  std::string auth_token;  // sent as "authorization: Bearer <token>"
  int cpus = 1;
  int gpus = 0;  // NVML's count where it loads, else /dev/nvidia<N>
  // --nvml-library PATH: the NVML library the inventory loads at run time.
  std::string nvml_library = "libnvidia-ml.so.1";
  // What this node is (agent/node/inventory.h), sent in Register; its hpcai500
  // version is added there.
  v1::Inventory inventory;
  // Why NVML gave no GPUs ("" when it did), for the start-up log.
  std::string nvml_missing;
  // Why `worker_path --version` gave no versions for the inventory ("" when
  // it did), for the start-up log (agent/node/worker_version.h).
  std::string worker_version_missing;
  std::string hostname;
  int64_t kill_grace_ms = 10000;
  // --data DATASET=DIR: where this node keeps a dataset (absolute, an
  // existing directory), keyed by the registry's dataset name.
  std::map<std::string, std::string> data_dirs;
  // --checkpoint-root DIR: where attempts keep checkpoints (absolute).
  std::string checkpoint_root;
  // --shared-checkpoints: checkpoint_root is one file system shared by every
  // node that says so (sent in Register).
  bool shared_checkpoints = false;
  // --mpirun PATH, --mpirun-rsh-agent PATH (OpenMPI's plm_rsh_agent: how
  // mpirun reaches the other nodes), --srun PATH: the launchers of runs
  // with spec.launcher mpirun or srun (docs/design.md "Launchers"). A name
  // without '/' is looked up on the agent's PATH at start-up.
  std::string mpirun = "mpirun";
  std::string mpirun_rsh_agent = "ssh";
  std::string srun = "srun";
  // --leave-on-stop: a pilot agent (deploy/slurm/agents.sbatch). On SIGTERM
  // or SIGINT it tells the coordinator it leaves (v1::Leaving), stops its
  // workers and delivers what they wrote before it exits, instead of leaving
  // them running for the next agent on this node.
  bool leave_on_stop = false;
  // --tls-ca, --tls-cert, --tls-key, read and checked: TLS to the
  // coordinator when ca_pem is set, with a client certificate when cert_pem
  // is.
  TlsFiles tls;
};

inline constexpr char kAgentUsage[] =
    "usage: hpcai500-agent --coordinator HOST:PORT --name NAME [--slots N]\n"
    "         [--workdir DIR] [--address ADDR] [--worker PATH]\n"
    "         [--labels k=v,k=v] [--token-file FILE | --token TOKEN]\n"
    "         [--kill-grace-seconds S] [--data DATASET=DIR]...\n"
    "         [--checkpoint-root DIR [--shared-checkpoints]]\n"
    "         [--tls-ca FILE [--tls-cert FILE --tls-key FILE]]\n"
    "         [--nvml-library PATH] [--iface NAME] [--env NAME]...\n"
    "         [--mpirun PATH] [--mpirun-rsh-agent PATH] [--srun PATH]\n"
    "         [--leave-on-stop]\n"
    "       hpcai500-agent --version\n"
    "  --address ADDR      the address other nodes reach this one at (rank\n"
    "                      0's rendezvous); default --iface's IPv4 address,\n"
    "                      else 127.0.0.1\n"
    "  --iface NAME        the interface workers' Gloo and NCCL bind to\n"
    "                      (GLOO_SOCKET_IFNAME, NCCL_SOCKET_IFNAME)\n"
    "  --env NAME          pass the agent's variable NAME on to workers;\n"
    "                      repeatable. Workers otherwise get only PATH, HOME,\n"
    "                      LANG, LC_*, TZ, LD_LIBRARY_PATH, NCCL_*, GLOO_*,\n"
    "                      OMPI_MCA_*, UCX_*, CUDA_* and their rank layout\n"
    "  --token-file FILE   send the file's token as 'authorization: Bearer\n"
    "                      ...'; --token gives it inline; without either,\n"
    "                      $HPCAI500_TOKEN if set\n"
    "  --data DATASET=DIR  this node keeps DATASET (a registry dataset name,\n"
    "                      e.g. imagenet) in DIR; workers of configs that\n"
    "                      read it get --data DIR instead of the registry's\n"
    "                      data_dir. Repeatable, one per dataset.\n"
    "  --checkpoint-root DIR\n"
    "                      where workers keep each attempt's checkpoints\n"
    "                      (DIR/run-ID/attempt-N); default\n"
    "                      WORKDIR/checkpoints\n"
    "  --shared-checkpoints\n"
    "                      DIR is one file system shared by every node given\n"
    "                      this flag, so a retry may resume on another node;\n"
    "                      needs --checkpoint-root\n"
    "  --mpirun PATH       OpenMPI's mpirun, for runs with launcher: mpirun\n"
    "                      (default: mpirun on PATH)\n"
    "  --mpirun-rsh-agent PATH\n"
    "                      how mpirun starts its daemons on the other nodes\n"
    "                      (--mca plm_rsh_agent; default ssh)\n"
    "  --srun PATH         Slurm's srun, for runs with launcher: srun inside\n"
    "                      the agents' allocation (default: srun on PATH)\n"
    "  --tls-ca FILE       connect over TLS, trusting only this CA (PEM) for\n"
    "                      the coordinator's certificate\n"
    "  --tls-cert FILE --tls-key FILE\n"
    "                      the client certificate (PEM) to present; one\n"
    "                      naming --name (DNS SAN or CN) when the coordinator\n"
    "                      runs with --tls-client-ca\n"
    "  --nvml-library PATH the NVML library GPUs are found with (default\n"
    "                      libnvidia-ml.so.1); without it, or without a\n"
    "                      driver, GPUs are counted from /dev/nvidia<N>\n"
    "  --leave-on-stop     a pilot agent (one Slurm allocation): on SIGTERM\n"
    "                      or SIGINT, tell the coordinator it leaves (its\n"
    "                      runs get a new attempt at once), stop its workers\n"
    "                      and deliver their last events, then exit, within\n"
    "                      --kill-grace-seconds + 5 s. Without it a stopped\n"
    "                      agent leaves its workers running for the next\n"
    "                      agent on the node\n"
    "exit codes: 0 stopped by SIGTERM or SIGINT, 1 it could not go on (say\n"
    "the coordinator refused it for good), 2 a bad command line or a token\n"
    "or TLS file that cannot be read\n";

// Parses the arguments after argv[0] (the rules of common/flags.h), reads
// the node's inventory (ReadInventory with --nvml-library) and fills in
// defaults: gpus = NVML's count when it loads, else CountGpus(); slots =
// GPUs or 1, workdir ./hpcai500-agent-NAME (made
// absolute), worker = hpcai500-worker beside this executable, checkpoint
// root WORKDIR/checkpoints (made absolute; --shared-checkpoints needs an
// explicit --checkpoint-root, as the default is this node's own). Checks that
// every --data DIR is an existing directory (made absolute). The token is
// --token, else --token-file's, else `token_env` ($HPCAI500_TOKEN; see
// common/token.h). The --tls-* files are read and checked
// (LoadClientTlsFiles). The worker is asked for its versions
// (AskWorkerVersion), which go into the inventory; when it cannot tell,
// worker_version_missing says why. --iface must name an interface of this
// node; without --address, the address is that interface's first IPv4
// address (an interface without one is refused). Every --env must be a variable
// name. InvalidArgument names the flag and the problem; a token or TLS file
// that cannot be read is NotFound.
absl::StatusOr<AgentOptions> ParseAgentArgs(
    const std::vector<std::string>& args,
    const std::optional<std::string>& token_env = std::nullopt);

// The number of /dev/nvidia<N> devices (GPUs where NVML cannot tell).
int CountGpus();

// CPUs this process may run on.
int CountCpus();

// hpcai500-worker in the directory of /proc/self/exe.
std::string DefaultWorkerPath();

}  // namespace hpcai500::agent

#endif  // HPCAI500_AGENT_OPTIONS_H_
