// Which of the agent's environment variables reach a worker.
#include "agent/launch/worker_env.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace hpcai500::agent {
namespace {

using Env = std::vector<std::string>;

TEST(WorkerBaseEnv, PassesOnlyTheAllowlist) {
  const Env agent_env = {"PATH=/usr/bin",
                         "HOME=/root",
                         "LANG=C.UTF-8",
                         "LC_ALL=C",
                         "TZ=UTC",
                         "LD_LIBRARY_PATH=/opt/lib",
                         "NCCL_DEBUG=INFO",
                         "GLOO_DEVICE_TRANSPORT=TCP",
                         "OMPI_MCA_btl=tcp,self",
                         "UCX_TLS=tcp",
                         "CUDA_VISIBLE_DEVICES=0,1",
                         "AWS_SECRET_ACCESS_KEY=hunter2",
                         "HPCAI500_TOKEN=t0k3n",
                         "SSH_AUTH_SOCK=/tmp/agent",
                         "PATHX=/evil",
                         "LC=no",
                         "OMPI_HOME=/opt/ompi",
                         "RANK=7"};
  EXPECT_EQ(WorkerBaseEnv(agent_env, {}, ""),
            (Env{"PATH=/usr/bin", "HOME=/root", "LANG=C.UTF-8", "LC_ALL=C",
                 "TZ=UTC", "LD_LIBRARY_PATH=/opt/lib", "NCCL_DEBUG=INFO",
                 "GLOO_DEVICE_TRANSPORT=TCP", "OMPI_MCA_btl=tcp,self",
                 "UCX_TLS=tcp", "CUDA_VISIBLE_DEVICES=0,1"}));
}

TEST(WorkerBaseEnv, EnvNamesAddTheAgentsOwnValues) {
  const Env agent_env = {"PATH=/bin", "SITE_LICENSE=abc=def", "OTHER=1"};
  EXPECT_EQ(WorkerBaseEnv(agent_env, {"SITE_LICENSE", "NOT_SET"}, ""),
            (Env{"PATH=/bin", "SITE_LICENSE=abc=def"}));
}

TEST(WorkerBaseEnv, IfaceNamesTheInterfaceOverTheAgentsOwn) {
  const Env agent_env = {"GLOO_SOCKET_IFNAME=eth9", "NCCL_DEBUG=WARN",
                         "NCCL_SOCKET_IFNAME=eth9"};
  EXPECT_EQ(WorkerBaseEnv(agent_env, {}, "ib0"),
            (Env{"NCCL_DEBUG=WARN", "GLOO_SOCKET_IFNAME=ib0",
                 "NCCL_SOCKET_IFNAME=ib0"}));
  // Without --iface the agent's own choice stands.
  EXPECT_EQ(WorkerBaseEnv(agent_env, {}, ""), agent_env);
}

TEST(WorkerBaseEnv, DropsEntriesWithoutAValue) {
  EXPECT_EQ(WorkerBaseEnv({"PATH", "HOME=/h", "=x"}, {}, ""), (Env{"HOME=/h"}));
}

TEST(IsEnvName, LettersDigitsAndUnderscoreNotLeadingDigit) {
  EXPECT_TRUE(IsEnvName("A"));
  EXPECT_TRUE(IsEnvName("_private_9"));
  EXPECT_TRUE(IsEnvName("lower_case"));
  EXPECT_FALSE(IsEnvName(""));
  EXPECT_FALSE(IsEnvName("9LIVES"));
  EXPECT_FALSE(IsEnvName("A=B"));
  EXPECT_FALSE(IsEnvName("A-B"));
  EXPECT_FALSE(IsEnvName("A B"));
}

TEST(IsAllowedWorkerEnvName, ExactNamesAndPrefixes) {
  for (const char* name : {"PATH", "HOME", "LANG", "TZ", "LD_LIBRARY_PATH",
                           "LC_CTYPE", "NCCL_IB_HCA", "GLOO_SOCKET_IFNAME",
                           "OMPI_MCA_pml", "UCX_NET_DEVICES", "CUDA_HOME"}) {
    EXPECT_TRUE(IsAllowedWorkerEnvName(name)) << name;
  }
  for (const char* name :
       {"AWS_SECRET_ACCESS_KEY", "HPCAI500_TOKEN", "PATH_X", "NCCL",
        "LD_PRELOAD", "USER", "OMPI_COMM_WORLD_SIZE"}) {
    EXPECT_FALSE(IsAllowedWorkerEnvName(name)) << name;
  }
}

}  // namespace
}  // namespace hpcai500::agent
