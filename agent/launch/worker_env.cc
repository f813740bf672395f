// The allowlist of the agent's environment variables a worker inherits.
#include "agent/launch/worker_env.h"

#include <algorithm>
#include <array>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace hpcai500::agent {
namespace {

constexpr std::array<absl::string_view, 5> kExactNames = {
    "PATH", "HOME", "LANG", "TZ", "LD_LIBRARY_PATH"};
constexpr std::array<absl::string_view, 6> kPrefixes = {
    "LC_", "NCCL_", "GLOO_", "OMPI_MCA_", "UCX_", "CUDA_"};

bool Contains(const std::vector<std::string>& names, absl::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

bool IsEnvName(absl::string_view name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') || c == '_';
  });
}

bool IsInterfaceEnvName(absl::string_view name) {
  return std::find(kInterfaceEnvNames.begin(), kInterfaceEnvNames.end(),
                   name) != kInterfaceEnvNames.end();
}

std::vector<std::string> InterfaceEnv(const std::string& iface) {
  std::vector<std::string> env;
  if (iface.empty()) return env;
  for (absl::string_view name : kInterfaceEnvNames) {
    env.push_back(absl::StrCat(name, "=", iface));
  }
  return env;
}

bool IsAllowedWorkerEnvName(absl::string_view name) {
  if (std::find(kExactNames.begin(), kExactNames.end(), name) !=
      kExactNames.end()) {
    return true;
  }
  return std::any_of(
      kPrefixes.begin(), kPrefixes.end(),
      [&](absl::string_view prefix) { return absl::StartsWith(name, prefix); });
}

std::vector<std::string> WorkerBaseEnv(
    const std::vector<std::string>& agent_env,
    const std::vector<std::string>& extra_names, const std::string& iface) {
  std::vector<std::string> env;
  for (const std::string& kv : agent_env) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos) continue;
    const absl::string_view name = absl::string_view(kv).substr(0, eq);
    if (!iface.empty() && IsInterfaceEnvName(name)) continue;  // replaced
    if (IsAllowedWorkerEnvName(name) || Contains(extra_names, name)) {
      env.push_back(kv);
    }
  }
  for (std::string& kv : InterfaceEnv(iface)) env.push_back(std::move(kv));
  return env;
}

}  // namespace hpcai500::agent
