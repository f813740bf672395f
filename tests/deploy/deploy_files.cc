#include "tests/deploy/deploy_files.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "common/yaml_text.h"
#include "nlohmann/json.hpp"

namespace hpcai500::deploy_test {
namespace {

namespace fs = std::filesystem;

std::string Trim(const std::string& text) {
  const size_t begin = text.find_first_not_of(" \t\r");
  if (begin == std::string::npos) return "";
  return text.substr(begin, text.find_last_not_of(" \t\r") - begin + 1);
}

std::string Upper(std::string text) {
  for (char& c : text) c = static_cast<char>(std::toupper(c));
  return text;
}

// Instructions with continuation lines joined; comment lines (also inside a
// continuation, as Docker reads them) and blank lines dropped.
std::vector<Instruction> Instructions(const std::string& text) {
  std::vector<Instruction> out;
  std::istringstream in(text);
  std::string line, pending;
  while (std::getline(in, line)) {
    const std::string trimmed = Trim(line);
    if (trimmed.empty() || trimmed[0] == '#') continue;
    std::string joined = pending.empty() ? trimmed : pending + " " + trimmed;
    if (joined.back() == '\\') {
      pending = Trim(joined.substr(0, joined.size() - 1));
      continue;
    }
    pending.clear();
    const size_t space = joined.find_first_of(" \t");
    out.push_back(
        {Upper(joined.substr(0, space)),
         space == std::string::npos ? "" : Trim(joined.substr(space))});
  }
  return out;
}

}  // namespace

std::string ReadRepoFile(const std::string& path) {
  std::ifstream in(std::string(HPCAI500_SOURCE_DIR) + "/" + path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string Dockerfile::Resolve(const std::string& base) const {
  static const std::regex kVariable(R"(\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?)");
  std::string out;
  auto last = base.cbegin();
  for (std::sregex_iterator it(base.begin(), base.end(), kVariable), end;
       it != end; ++it) {
    out.append(last, base.cbegin() + it->position());
    auto arg = global_args.find((*it)[1]);
    out += arg == global_args.end() ? it->str() : arg->second;
    last = base.cbegin() + it->position() + it->length();
  }
  out.append(last, base.cend());
  return out;
}

std::string Dockerfile::Title() const {
  if (stages.empty()) return "";
  static const std::regex kTitle(
      R"re(org\.opencontainers\.image\.title="?([^"\s]+))re");
  std::smatch match;
  for (const std::string& label : All(stages.back(), "LABEL")) {
    if (std::regex_search(label, match, kTitle)) return match[1];
  }
  return "";
}

Dockerfile ReadDockerfile(const std::string& file) {
  Dockerfile dockerfile;
  dockerfile.path = "deploy/containers/" + file;
  for (Instruction& instruction : Instructions(ReadRepoFile(dockerfile.path))) {
    if (instruction.keyword == "FROM") {
      std::istringstream words(instruction.rest);
      Stage stage;
      std::string word, as;
      while (words >> word && word.rfind("--", 0) == 0) {
      }  // --platform=...
      stage.base = word;
      if (words >> as && Upper(as) == "AS") words >> stage.name;
      dockerfile.stages.push_back(std::move(stage));
    } else if (dockerfile.stages.empty()) {
      if (instruction.keyword != "ARG") continue;
      const size_t eq = instruction.rest.find('=');
      dockerfile.global_args[instruction.rest.substr(0, eq)] =
          eq == std::string::npos ? "" : instruction.rest.substr(eq + 1);
    } else {
      dockerfile.stages.back().instructions.push_back(std::move(instruction));
    }
  }
  return dockerfile;
}

std::optional<std::vector<std::string>> ExecForm(const std::string& rest) {
  if (rest.empty() || rest[0] != '[') return std::nullopt;
  nlohmann::json words = nlohmann::json::parse(rest, nullptr, false);
  if (!words.is_array()) return std::nullopt;
  std::vector<std::string> out;
  for (const nlohmann::json& word : words) {
    if (!word.is_string()) return std::nullopt;
    out.push_back(word.get<std::string>());
  }
  return out;
}

std::vector<std::string> All(const Stage& stage, const std::string& keyword) {
  std::vector<std::string> out;
  for (const Instruction& instruction : stage.instructions) {
    if (instruction.keyword == keyword) out.push_back(instruction.rest);
  }
  return out;
}

std::vector<std::string> DockerfileNames() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(
           std::string(HPCAI500_SOURCE_DIR) + "/deploy/containers", ec)) {
    const std::string name = entry.path().filename().string();
    if (entry.path().extension() == ".Dockerfile") names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<Dockerfile> AllDockerfiles() {
  std::vector<Dockerfile> files;
  for (const std::string& name : DockerfileNames()) {
    files.push_back(ReadDockerfile(name));
  }
  return files;
}

const Dockerfile* ByTitle(const std::vector<Dockerfile>& files,
                          const std::string& title) {
  for (const Dockerfile& file : files) {
    if (file.Title() == title) return &file;
  }
  return nullptr;
}

std::string ImageRuns(const std::vector<Dockerfile>& files,
                      const Dockerfile& file) {
  std::string runs;
  std::set<const Dockerfile*> seen;
  for (const Dockerfile* f = &file;
       f != nullptr && !f->stages.empty() && seen.insert(f).second;
       f = ByTitle(files, f->Resolve(f->stages.back().base))) {
    for (const std::string& run : All(f->stages.back(), "RUN")) {
      runs += run + "\n";
    }
  }
  return runs;
}

std::vector<Manifest> LoadManifests() {
  std::vector<Manifest> manifests;
  const std::string kustomization = "deploy/k8s/kustomization.yaml";
  auto root = LoadYamlDocuments(ReadRepoFile(kustomization), kustomization);
  if (!root.ok() || root->size() != 1) {
    ADD_FAILURE() << kustomization << ": " << root.status();
    return manifests;
  }
  for (const YAML::Node& resource : (*root)[0]["resources"]) {
    const std::string file = "deploy/k8s/" + resource.as<std::string>();
    auto documents = LoadYamlDocuments(ReadRepoFile(file), file);
    if (!documents.ok()) {
      ADD_FAILURE() << documents.status();
      continue;
    }
    if (documents->empty()) ADD_FAILURE() << file << " is empty or missing";
    for (const YAML::Node& node : *documents) manifests.push_back({file, node});
  }
  return manifests;
}

YAML::Node FindManifest(const std::vector<Manifest>& manifests,
                        const std::string& kind, const std::string& name) {
  YAML::Node found;
  int count = 0;
  for (const Manifest& manifest : manifests) {
    if (manifest.node["kind"].as<std::string>("") == kind &&
        manifest.node["metadata"]["name"].as<std::string>("") == name) {
      found = manifest.node;
      ++count;
    }
  }
  if (count != 1) {
    ADD_FAILURE() << count << " manifests of kind " << kind << " named "
                  << name;
    return YAML::Node(YAML::NodeType::Undefined);
  }
  return found;
}

std::optional<std::string> FlagValue(const std::vector<std::string>& args,
                                     const std::string& flag) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == flag && i + 1 < args.size()) return args[i + 1];
    if (args[i].rfind(flag + "=", 0) == 0) {
      return args[i].substr(flag.size() + 1);
    }
  }
  return std::nullopt;
}

int PortOf(const std::string& host_port) {
  const size_t colon = host_port.rfind(':');
  if (colon == std::string::npos) return -1;
  try {
    return std::stoi(host_port.substr(colon + 1));
  } catch (const std::exception&) {
    return -1;
  }
}

std::map<std::string, std::string> ProjectExecutables() {
  static const std::regex kExecutable(R"(add_executable\(\s*([^\s)]+))");
  static const std::regex kOutputName(
      R"(set_target_properties\(\s*([^\s)]+)\s+PROPERTIES[^)]*OUTPUT_NAME\s+([^\s)]+))");
  std::map<std::string, std::string> executables;
  for (const char* dir : {"server", "agent", "cli", "worker"}) {
    const std::string text = ReadRepoFile(std::string(dir) + "/CMakeLists.txt");
    for (std::sregex_iterator it(text.begin(), text.end(), kExecutable), end;
         it != end; ++it) {
      executables[(*it)[1]] = (*it)[1];
    }
    for (std::sregex_iterator it(text.begin(), text.end(), kOutputName), end;
         it != end; ++it) {
      executables[(*it)[1]] = (*it)[2];
    }
  }
  return executables;
}

RunResult RunBinary(const std::string& binary,
                    const std::vector<std::string>& args) {
  return RunProgram(std::string(HPCAI500_BINARY_DIR) + "/bin/" + binary, args);
}

RunResult RunProgram(const std::string& path,
                     const std::vector<std::string>& args) {
  RunResult result;
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) return result;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(pipe_fds[1], 1);
    ::dup2(pipe_fds[1], 2);
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
    ::close(0);
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(path.c_str()));
    for (const std::string& arg : args) {
      argv.push_back(const_cast<char*>(arg.c_str()));
    }
    argv.push_back(nullptr);
    ::execv(path.c_str(), argv.data());
    ::_exit(127);
  }
  ::close(pipe_fds[1]);
  char buffer[4096];
  ssize_t n;
  while ((n = ::read(pipe_fds[0], buffer, sizeof(buffer))) > 0) {
    result.output.append(buffer, static_cast<size_t>(n));
  }
  ::close(pipe_fds[0]);
  int status = 0;
  if (pid > 0 && ::waitpid(pid, &status, 0) == pid && WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  }
  return result;
}

bool IsBuilt(const std::string& binary) {
  return fs::exists(std::string(HPCAI500_BINARY_DIR) + "/bin/" + binary);
}

std::vector<std::string> FlagsIn(const std::string& text) {
  static const std::regex kFlag(R"((^|[\s\[|(])(--[a-z][a-z0-9-]*))");
  std::set<std::string> flags;
  for (std::sregex_iterator it(text.begin(), text.end(), kFlag), end; it != end;
       ++it) {
    flags.insert((*it)[2]);
  }
  return std::vector<std::string>(flags.begin(), flags.end());
}

}  // namespace hpcai500::deploy_test
