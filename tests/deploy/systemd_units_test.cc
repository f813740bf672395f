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

// Key -> value of one section of a unit (continued lines joined).
std::map<std::string, std::string> UnitSection(const std::string& file,
                                               const std::string& wanted) {
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
    if (section == wanted && eq != std::string::npos) {
      keys[line.substr(0, eq)] = line.substr(eq + 1);
    }
  }
  return keys;
}

// The [Service] section.
std::map<std::string, std::string> ServiceSection(const std::string& file) {
  return UnitSection(file, "[Service]");
}

// Whether `file` exists under deploy/systemd/.
bool UnitExists(const std::string& file) {
  return std::ifstream(std::string(HPCAI500_SOURCE_DIR) + "/deploy/systemd/" +
                       file)
      .good();
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

TEST(SystemdUnits, NightlyTimerStartsTheRegressCheckEveryNight) {
  std::map<std::string, std::string> timer =
      UnitSection("hpcai500-nightly.timer", "[Timer]");
  ASSERT_FALSE(timer.empty()) << "deploy/systemd/hpcai500-nightly.timer";
  EXPECT_EQ(timer["OnCalendar"], "*-*-* 02:17:00 UTC");
  EXPECT_EQ(timer["Persistent"], "true");
  ASSERT_EQ(timer["Unit"], "hpcai500-nightly.service");
  EXPECT_TRUE(UnitExists(timer["Unit"]));
  EXPECT_EQ(UnitSection("hpcai500-nightly.timer", "[Install]")["WantedBy"],
            "timers.target");
}

TEST(SystemdUnits, NightlyServiceRunsTheSuiteAndKeepsItsReports) {
  std::map<std::string, std::string> s =
      ServiceSection("hpcai500-nightly.service");
  ASSERT_FALSE(s.empty()) << "deploy/systemd/hpcai500-nightly.service";
  EXPECT_EQ(s["Type"], "oneshot");
  EXPECT_EQ(s["User"], "hpcai500");
  EXPECT_EQ(s["StateDirectory"], "hpcai500-nightly");
  EXPECT_EQ(s["NoNewPrivileges"], "yes");
  EXPECT_EQ(s["ProtectSystem"], "strict");
  EXPECT_EQ(s["PrivateTmp"], "yes");
  EXPECT_EQ(s["CapabilityBoundingSet"], "");
  EXPECT_NE(s["LoadCredential"].find("nightly-token:"), std::string::npos);
  const std::string& exec = s["ExecStart"];
  for (const char* part :
       {"/usr/local/bin/hpcai500 ", "--token-file %d/nightly-token", "--tls-ca",
        " regress ", "suites/nightly-smoke.yaml",
        "--junit /var/lib/hpcai500-nightly/",
        "--markdown /var/lib/hpcai500-nightly/",
        "--json-file /var/lib/hpcai500-nightly/"}) {
    EXPECT_NE(exec.find(part), std::string::npos) << part << " in " << exec;
  }
  // The suite the unit names is the one in the repository.
  std::ifstream suite(std::string(HPCAI500_SOURCE_DIR) +
                      "/suites/nightly-smoke.yaml");
  EXPECT_TRUE(suite.good());
}

}  // namespace
}  // namespace hpcai500
