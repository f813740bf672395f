#include "tests/netns/netns_lab.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <sstream>

#include "tests/integration/harness.h"

namespace hpcai500::testing {
namespace {

constexpr std::chrono::seconds kIpTimeout(20);

std::string FindIp() {
  for (const char* path :
       {"/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"}) {
    if (::access(path, X_OK) == 0) return path;
  }
  return "";
}

}  // namespace

std::unique_ptr<NetnsLab> NetnsLab::Make(std::string* skip,
                                         std::string* error) {
  if (::geteuid() != 0) {
    *skip = "network namespaces need root";
    return nullptr;
  }
  std::unique_ptr<NetnsLab> lab(new NetnsLab());
  lab->ip_ = FindIp();
  if (lab->ip_.empty()) {
    *skip = "no `ip` (iproute2) to make network namespaces with";
    return nullptr;
  }
  const int pid = static_cast<int>(::getpid());
  // A /24 of 10.231/16 per test process, so parallel runs do not share one.
  const std::string net = "10.231." + std::to_string(pid % 250) + ".";
  lab->bridge_ = "hb" + std::to_string(pid);
  lab->bridge_address_ = net + "1";
  for (int i = 0; i < kHosts; ++i) {
    const std::string tag = std::to_string(pid) + static_cast<char>('a' + i);
    lab->hosts_.push_back(Host{"hpcai500-" + tag, "ho" + tag, "hi" + tag,
                               net + std::to_string(2 + i)});
  }
  std::string why;
  for (const Host& host : lab->hosts_) {
    if (!lab->Ip({"netns", "add", host.ns}, &why)) {
      *skip = "`ip netns add` failed: " + why;
      return nullptr;  // the destructor removes any made before
    }
    ++lab->namespaces_made_;
  }
  if (!lab->Build(skip, error)) return nullptr;
  return lab;
}

bool NetnsLab::Build(std::string* skip, std::string* error) {
  // A machine (a container) may allow namespaces but not these link types:
  // that is a machine without what the test needs, not a failure.
  std::string why;
  if (!Ip({"link", "add", bridge_, "type", "bridge"}, &why)) {
    *skip = "cannot make a bridge (`ip link add ... type bridge`): " + why;
    return false;
  }
  if (!Ip({"link", "add", hosts_.front().outside, "type", "veth", "peer",
           "name", hosts_.front().inside},
          &why)) {
    *skip = "cannot make a veth pair (`ip link add ... type veth`): " + why;
    return false;
  }
  if (!Ip({"addr", "add", bridge_address_ + "/24", "dev", bridge_}, error) ||
      !Ip({"link", "set", bridge_, "up"}, error)) {
    return false;
  }
  for (const Host& host : hosts_) {
    if ((&host != &hosts_.front() && !Ip({"link", "add", host.outside, "type",
                                          "veth", "peer", "name", host.inside},
                                         error)) ||
        !Ip({"link", "set", host.outside, "master", bridge_}, error) ||
        !Ip({"link", "set", host.outside, "up"}, error) ||
        !Ip({"link", "set", host.inside, "netns", host.ns}, error) ||
        !Ip({"-n", host.ns, "addr", "add", host.address + "/24", "dev",
             host.inside},
            error) ||
        !Ip({"-n", host.ns, "link", "set", host.inside, "up"}, error) ||
        !Ip({"-n", host.ns, "link", "set", "lo", "up"}, error)) {
      return false;
    }
  }
  return true;
}

NetnsLab::~NetnsLab() {
  for (int i = 0; i < namespaces_made_; ++i) {
    // Workers run in sessions of their own: whatever is left in a namespace
    // is killed, or the namespace would outlive the test.
    CommandResult pids =
        RunCommand({ip_, "netns", "pids", hosts_[i].ns}, kIpTimeout);
    std::istringstream in(pids.out);
    for (long pid = 0; in >> pid;) {
      if (pid > 1) ::kill(static_cast<pid_t>(pid), SIGKILL);
    }
  }
  for (const Host& host : hosts_) Ip({"link", "del", host.outside});
  if (!bridge_.empty()) Ip({"link", "del", bridge_});
  for (int i = 0; i < namespaces_made_; ++i) {
    Ip({"netns", "del", hosts_[i].ns});
  }
}

std::vector<std::string> NetnsLab::ExecPrefix(int i) const {
  return {ip_, "netns", "exec", hosts_[i].ns};
}

bool NetnsLab::SetLink(int i, bool up) {
  return Ip({"-n", hosts_[i].ns, "link", "set", hosts_[i].inside,
             up ? "up" : "down"});
}

bool NetnsLab::Ip(const std::vector<std::string>& args, std::string* error) {
  std::vector<std::string> argv = {ip_};
  argv.insert(argv.end(), args.begin(), args.end());
  CommandResult result = RunCommand(argv, kIpTimeout);
  if (result.exit_code == 0) return true;
  if (error != nullptr) {
    *error = "ip";
    for (const std::string& a : args) *error += " " + a;
    *error += ": " + result.err;
  }
  return false;
}

}  // namespace hpcai500::testing
