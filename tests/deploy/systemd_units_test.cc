// The shipped systemd units: hardened service sections, and a coordinator
// that turns TLS on (auth follows from its tokens). They cannot be started
// here, so the fields that matter are read and checked.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>

namespace hpcai500 {
namespace {

// Key -> value of a unit's [Service] section (continued lines joined).
std::map<std::string, std::string> ServiceSection(const std::string& file) {
  std::ifstream in(std::string(HPCAI500_SOURCE_DIR) + "/deploy/systemd/" +
                   file);
  std::map<std::string, std::string> keys;
  std::string line, section, pending;
  while (std::getline(in, line)) {
    if (!pending.empty()) line = pending + " " + line;
    pending.clear();
    if (!line.empty() && line.back() == '\\') {
      pending = line.substr(0, line.size() - 1);
      continue;
    }
    if (line.empty() || line[0] == '#') continue;
    if (line[0] == '[') {
      section = line;
      continue;
    }
    const size_t eq = line.find('=');
    if (section == "[Service]" && eq != std::string::npos) {
      keys[line.substr(0, eq)] = line.substr(eq + 1);
    }
  }
  return keys;
}

TEST(SystemdUnits, CoordinatorIsHardenedAndServesTls) {
  std::map<std::string, std::string> s = ServiceSection("hpcai500d.service");
  ASSERT_FALSE(s.empty()) << "deploy/systemd/hpcai500d.service not read";
  EXPECT_EQ(s["User"], "hpcai500");
  EXPECT_EQ(s["StateDirectory"], "hpcai500");
  EXPECT_EQ(s["NoNewPrivileges"], "yes");
  EXPECT_EQ(s["ProtectSystem"], "strict");
  EXPECT_EQ(s["PrivateTmp"], "yes");
  EXPECT_EQ(s["PrivateDevices"], "yes");
  EXPECT_EQ(s["CapabilityBoundingSet"], "");
  const std::string& exec = s["ExecStart"];
  for (const char* flag : {"--tls-cert", "--tls-key", "--tls-client-ca",
                           "--db /var/lib/hpcai500/"}) {
    EXPECT_NE(exec.find(flag), std::string::npos) << flag << " in " << exec;
  }
  EXPECT_EQ(exec.find("--insecure"), std::string::npos);
}

TEST(SystemdUnits, AgentSendsItsTokenAndCertificate) {
  std::map<std::string, std::string> s =
      ServiceSection("hpcai500-agent.service");
  ASSERT_FALSE(s.empty());
  EXPECT_EQ(s["NoNewPrivileges"], "yes");
  EXPECT_EQ(s["PrivateTmp"], "yes");
  EXPECT_EQ(s["KillMode"], "process");  // workers outlive an agent restart
  EXPECT_NE(s["LoadCredential"].find("agent-token:"), std::string::npos);
  const std::string& exec = s["ExecStart"];
  for (const char* flag :
       {"--token-file %d/agent-token", "--tls-ca", "--tls-cert", "--name %H"}) {
    EXPECT_NE(exec.find(flag), std::string::npos) << flag << " in " << exec;
  }
}

}  // namespace
}  // namespace hpcai500
