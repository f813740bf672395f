// Readers of the shipped deployment files for the tests that check them:
// Dockerfiles (deploy/containers), Kubernetes manifests (deploy/k8s, loaded
// through LoadYamlDocuments like every YAML the project reads), the CMake
// executables and the binaries' own command lines. None of the files can be
// run here, so the tests read the fields that matter and cross-check them.
//
// Thread-compatible: plain functions over values.
#ifndef HPCAI500_TESTS_DEPLOY_DEPLOY_FILES_H_
#define HPCAI500_TESTS_DEPLOY_DEPLOY_FILES_H_

#include <yaml-cpp/yaml.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace hpcai500::deploy_test {

// The text of `path` relative to the repository root; "" when unreadable.
std::string ReadRepoFile(const std::string& path);

// One instruction of a Dockerfile, continuation lines joined and comments
// dropped: keyword upper-cased ("COPY"), the rest as written.
struct Instruction {
  std::string keyword;
  std::string rest;
};

// A FROM and the instructions up to the next one.
struct Stage {
  std::string base;  // as written: "debian:12", "${WORKER_IMAGE}", "build"
  std::string name;  // the AS name, "" without one
  std::vector<Instruction> instructions;
};

struct Dockerfile {
  std::string path;
  // ARG NAME=DEFAULT before the first FROM (those a FROM may use).
  std::map<std::string, std::string> global_args;
  std::vector<Stage> stages;

  // `base` with ${NAME} / $NAME of a global ARG replaced by its default.
  std::string Resolve(const std::string& base) const;
  // The value of the org.opencontainers.image.title LABEL of the last
  // stage, "" without one.
  std::string Title() const;
};

// Parses deploy/containers/`file`. Empty stages when unreadable.
Dockerfile ReadDockerfile(const std::string& file);

// The words of an exec-form instruction (["a", "b"]); nullopt for shell form.
std::optional<std::vector<std::string>> ExecForm(const std::string& rest);

// The values of the instructions `keyword` in `stage`, in order.
std::vector<std::string> All(const Stage& stage, const std::string& keyword);

// The file names of deploy/containers/*.Dockerfile.
std::vector<std::string> DockerfileNames();

// Every deploy/containers/*.Dockerfile, parsed, in name order.
std::vector<Dockerfile> AllDockerfiles();

// The file in `files` whose image is `title`, or nullptr.
const Dockerfile* ByTitle(const std::vector<Dockerfile>& files,
                          const std::string& title);

// The RUN lines of `file`'s final stage and of the final stages of the
// images of `files` it builds on (FROM one of ours), one a line: what the
// image it makes has run.
std::string ImageRuns(const std::vector<Dockerfile>& files,
                      const Dockerfile& file);

// Every document of the resources deploy/k8s/kustomization.yaml lists, in
// order, each tagged with its file. ADD_FAILURE for a file that does not
// parse.
struct Manifest {
  std::string file;
  YAML::Node node;
};
std::vector<Manifest> LoadManifests();

// The single manifest of `kind` named `name`; an undefined node (and
// ADD_FAILURE) when there is none or more than one.
YAML::Node FindManifest(const std::vector<Manifest>& manifests,
                        const std::string& kind, const std::string& name);

// The value after `flag` in `args` ("--db" -> "/var/lib/..."), or
// "--flag=value"'s value; nullopt when absent.
std::optional<std::string> FlagValue(const std::vector<std::string>& args,
                                     const std::string& flag);

// The port of "HOST:PORT"; -1 when there is none.
int PortOf(const std::string& host_port);

// Executable target -> the file name it builds (OUTPUT_NAME or the target's
// name), read from the CMakeLists.txt of server/, agent/, cli/ and worker/.
std::map<std::string, std::string> ProjectExecutables();

// Runs build/bin/`binary` with `args` (no shell), stdout and stderr
// together, stdin empty. exit_code is -1 when it could not run or was killed.
struct RunResult {
  int exit_code = -1;
  std::string output;
};
RunResult RunBinary(const std::string& binary,
                    const std::vector<std::string>& args);

// Runs the program at `path` (absolute) the same way.
RunResult RunProgram(const std::string& path,
                     const std::vector<std::string>& args);

// Whether build/bin/`binary` exists (the worker is not built without
// LibTorch).
bool IsBuilt(const std::string& binary);

// The flags ("--name") a usage text names.
std::vector<std::string> FlagsIn(const std::string& text);

}  // namespace hpcai500::deploy_test

#endif  // HPCAI500_TESTS_DEPLOY_DEPLOY_FILES_H_
