// NetnsLab: two "hosts" on one machine for tests that cross a network
// boundary. Two network namespaces, each joined by a veth pair to a bridge in
// the root namespace that has an address of its own (where hpcai500d
// listens). Names carry the test's pid, so parallel runs do not collide.
//
// Needs root and iproute2's `ip`. Not thread-safe: one test thread.
#ifndef HPCAI500_TESTS_NETNS_NETNS_LAB_H_
#define HPCAI500_TESTS_NETNS_NETNS_LAB_H_

#include <memory>
#include <string>
#include <vector>

namespace hpcai500::testing {

class NetnsLab {
 public:
  static constexpr int kHosts = 2;

  // Makes the namespaces, the bridge and the links. Returns null with *skip
  // set when namespaces cannot be made here (not root, no `ip`, `ip netns
  // add` refused), or null with *error set when a later step failed (what
  // was made is removed again).
  static std::unique_ptr<NetnsLab> Make(std::string* skip, std::string* error);
  // Kills every process left in the namespaces, removes them and the links.
  ~NetnsLab();

  NetnsLab(const NetnsLab&) = delete;
  NetnsLab& operator=(const NetnsLab&) = delete;

  // The bridge's address in the root namespace.
  const std::string& bridge_address() const { return bridge_address_; }
  // Host i's namespace, its interface there and that interface's address.
  const std::string& ns(int i) const { return hosts_[i].ns; }
  const std::string& iface(int i) const { return hosts_[i].inside; }
  const std::string& address(int i) const { return hosts_[i].address; }
  // The command that runs the rest of an argv inside host i's namespace.
  std::vector<std::string> ExecPrefix(int i) const;
  // Sets host i's interface down or up (from inside its namespace). Returns
  // false when `ip` failed.
  bool SetLink(int i, bool up);

 private:
  struct Host {
    std::string ns, outside, inside, address;
  };

  NetnsLab() = default;
  // Runs `ip` with args; true on exit 0 (else the output in *error).
  bool Ip(const std::vector<std::string>& args, std::string* error = nullptr);
  bool Build(std::string* skip, std::string* error);

  std::string ip_;
  std::string bridge_, bridge_address_;
  std::vector<Host> hosts_;
  int namespaces_made_ = 0;
};

}  // namespace hpcai500::testing

#endif  // HPCAI500_TESTS_NETNS_NETNS_LAB_H_
