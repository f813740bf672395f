// The container files of deploy/containers: every stage builds from
// something that exists, the images run as a user that is not root, their
// entry points are binaries this project builds, with flags those binaries
// accept, and the coordinator exposes and probes the ports it listens on.
// Docker cannot run here, so the files are read and checked.
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "server/http/router.h"
#include "tests/deploy/deploy_files.h"
#include "tests/server/http/fake_coordinator_view.h"

namespace hpcai500::deploy_test {
namespace {

// The last value of `keyword` in the final stage, looking through to the
// base image when it is one of ours and the final stage sets none.
std::string Inherited(const std::vector<Dockerfile>& files,
                      const Dockerfile& file, const std::string& keyword) {
  if (file.stages.empty()) return "";
  std::vector<std::string> values = All(file.stages.back(), keyword);
  if (!values.empty()) return values.back();
  const Dockerfile* base =
      ByTitle(files, file.Resolve(file.stages.back().base));
  return base == nullptr || base == &file ? ""
                                          : Inherited(files, *base, keyword);
}

std::string EntrypointBinary(const std::vector<Dockerfile>& files,
                             const Dockerfile& file) {
  auto words = ExecForm(Inherited(files, file, "ENTRYPOINT"));
  if (!words || words->empty()) return "";
  const std::string& path = (*words)[0];
  return path.substr(path.rfind('/') + 1);
}

TEST(ContainerFiles, EachFileNamesItsOwnImage) {
  std::vector<Dockerfile> files = AllDockerfiles();
  ASSERT_GE(files.size(), 3u) << "coordinator, agent and worker";
  std::set<std::string> titles;
  for (const Dockerfile& file : files) {
    ASSERT_FALSE(file.stages.empty()) << file.path << " has no FROM";
    EXPECT_FALSE(file.Title().empty())
        << file.path << ": no org.opencontainers.image.title LABEL";
    EXPECT_TRUE(titles.insert(file.Title()).second)
        << file.path << ": image " << file.Title() << " built twice";
  }
}

TEST(ContainerFiles, EveryStageBuildsFromSomethingThatExists) {
  std::vector<Dockerfile> files = AllDockerfiles();
  for (const Dockerfile& file : files) {
    std::set<std::string> stages;
    for (const Stage& stage : file.stages) {
      const std::string base = file.Resolve(stage.base);
      EXPECT_EQ(base.find('$'), std::string::npos)
          << file.path << ": FROM " << stage.base
          << " names an ARG without a default before the first FROM";
      const bool earlier_stage = stages.count(base) > 0;
      const bool our_image = ByTitle(files, base) != nullptr;
      // Anything else is pulled: a tagged image, never an implicit latest.
      EXPECT_TRUE(earlier_stage || our_image ||
                  base.find(':') != std::string::npos)
          << file.path << ": FROM " << base
          << " is neither an earlier stage, an image of deploy/containers "
             "nor a tagged image";
      EXPECT_NE(ByTitle(files, base), &file)
          << file.path << " builds from itself";
      for (const std::string& copy : All(stage, "COPY")) {
        std::smatch from;
        if (std::regex_search(copy, from, std::regex(R"(--from=(\S+))"))) {
          EXPECT_TRUE(stages.count(from[1]) > 0)
              << file.path << ": COPY --from=" << from[1]
              << " names no earlier stage";
        }
      }
      if (!stage.name.empty()) {
        EXPECT_TRUE(stages.insert(stage.name).second)
            << file.path << ": stage " << stage.name << " twice";
      }
    }
  }
}

TEST(ContainerFiles, FinalStageRunsAsAUserTheImageCreates) {
  std::vector<Dockerfile> files = AllDockerfiles();
  for (const Dockerfile& file : files) {
    const std::string user = Inherited(files, file, "USER");
    ASSERT_FALSE(user.empty()) << file.path << ": the final stage runs as root";
    EXPECT_NE(user, "root") << file.path;
    EXPECT_NE(user.substr(0, user.find(':')), "0") << file.path;
    // Created by useradd in this image or the one it builds on.
    const std::string runs = ImageRuns(files, file);
    EXPECT_TRUE(std::regex_search(
        runs, std::regex("useradd [^&]*--uid [0-9]+[^&]* " + user + "(\\s|$)")))
        << file.path << ": no useradd --uid N ... " << user;
  }
}

TEST(ContainerFiles, EntrypointsAreBinariesTheProjectBuilds) {
  std::vector<Dockerfile> files = AllDockerfiles();
  const std::map<std::string, std::string> executables = ProjectExecutables();
  ASSERT_FALSE(executables.empty()) << "no add_executable found";
  for (const Dockerfile& file : files) {
    const std::string binary = EntrypointBinary(files, file);
    ASSERT_FALSE(binary.empty())
        << file.path << ": no exec-form ENTRYPOINT [\"binary\", ...]";
    EXPECT_EQ(binary, file.Title())
        << file.path << ": the image is named after what it runs";
    // Every build/bin/NAME it copies is built in the file by its target.
    std::string runs, copies;
    for (const Stage& stage : file.stages) {
      for (const std::string& run : All(stage, "RUN")) runs += run + "\n";
      for (const std::string& copy : All(stage, "COPY")) copies += copy + " ";
    }
    std::set<std::string> copied;
    static const std::regex kBuilt(R"(build/bin/([A-Za-z0-9_.-]+))");
    for (std::sregex_iterator it(copies.begin(), copies.end(), kBuilt), end;
         it != end; ++it) {
      copied.insert((*it)[1]);
    }
    for (const std::string& name : copied) {
      bool built = false;
      for (const auto& [target, output] : executables) {
        built |= output == name &&
                 std::regex_search(runs, std::regex("--target [^\\n&]*\\b" +
                                                    target + "( |\\n|$)"));
      }
      EXPECT_TRUE(built) << file.path << " copies build/bin/" << name
                         << " but builds no CMake target that makes it";
    }
    bool entrypoint_is_project_binary = false;
    for (const auto& [target, output] : executables) {
      entrypoint_is_project_binary |= output == binary;
    }
    EXPECT_TRUE(entrypoint_is_project_binary)
        << file.path << ": " << binary << " is no CMake executable";
    if (!All(file.stages.back(), "ENTRYPOINT").empty()) {
      EXPECT_TRUE(copied.count(binary) > 0)
          << file.path << " runs " << binary << " but does not copy it";
    }
  }
}

TEST(ContainerFiles, CmdFlagsAreOnesTheBinaryAccepts) {
  std::vector<Dockerfile> files = AllDockerfiles();
  for (const Dockerfile& file : files) {
    const std::string binary = EntrypointBinary(files, file);
    auto cmd = ExecForm(Inherited(files, file, "CMD"));
    ASSERT_TRUE(cmd.has_value()) << file.path << ": no exec-form CMD";
    if (!IsBuilt(binary)) {
      std::cout << "not checked: " << binary << " is not built here\n";
      continue;
    }
    RunResult help = RunBinary(binary, {"--help"});
    ASSERT_EQ(help.exit_code, 0) << binary << " --help:\n" << help.output;
    std::vector<std::string> known = FlagsIn(help.output);
    known.push_back("--help");  // just answered
    for (const std::string& word : *cmd) {
      if (word.rfind("--", 0) != 0) continue;
      const std::string flag = word.substr(0, word.find('='));
      EXPECT_TRUE(std::find(known.begin(), known.end(), flag) != known.end())
          << file.path << ": " << binary << " has no flag " << flag;
    }
    if (binary == "hpcai500d") {
      // The whole command line parses (values too): only then does --help
      // print the usage and exit 0 instead of refusing a flag.
      std::vector<std::string> args = *cmd;
      args.push_back("--help");
      RunResult parsed = RunBinary(binary, args);
      EXPECT_EQ(parsed.exit_code, 0) << file.path << ":\n" << parsed.output;
    }
  }
}

// deploy/containers/build-images.sh runs `BINARY --version` in each image:
// every binary answers it with its name, the project version and the git
// revision, and exits 0 without parsing anything else.
TEST(ContainerFiles, EveryEntrypointBinaryAnswersVersion) {
  std::vector<Dockerfile> files = AllDockerfiles();
  std::set<std::string> binaries = {"hpcai500"};  // the CLI, in two images
  for (const Dockerfile& file : files) {
    binaries.insert(EntrypointBinary(files, file));
  }
  for (const std::string& binary : binaries) {
    if (!IsBuilt(binary)) {
      std::cout << "not checked: " << binary << " is not built here\n";
      continue;
    }
    RunResult version = RunBinary(binary, {"--version"});
    EXPECT_EQ(version.exit_code, 0) << binary << " --version:\n"
                                    << version.output;
    const std::string name =
        binary == "hpcai500-worker" ? "worker=" : binary + " ";
    EXPECT_TRUE(std::regex_search(
        version.output,
        std::regex("^" + name +
                   R"([0-9]+\.[0-9]+\.[0-9]+ \(git ([0-9a-f]{12}|unknown)\))")))
        << binary << " --version:\n"
        << version.output;
  }
}

TEST(ContainerFiles, CoordinatorExposesAndProbesThePortsItListensOn) {
  std::vector<Dockerfile> files = AllDockerfiles();
  for (const Dockerfile& file : files) {
    std::set<int> exposed;
    for (const std::string& expose : All(file.stages.back(), "EXPOSE")) {
      std::istringstream ports(expose);
      std::string port;
      while (ports >> port) exposed.insert(std::stoi(port));
    }
    if (EntrypointBinary(files, file) != "hpcai500d") {
      // The agent dials out and the worker listens on nothing of its own.
      EXPECT_TRUE(exposed.empty()) << file.path << " exposes a port";
      continue;
    }
    auto cmd = ExecForm(Inherited(files, file, "CMD"));
    ASSERT_TRUE(cmd.has_value());
    const int grpc = PortOf(FlagValue(*cmd, "--grpc").value_or(""));
    const int http = PortOf(FlagValue(*cmd, "--http").value_or(""));
    EXPECT_EQ(exposed, (std::set<int>{grpc, http}))
        << file.path << ": EXPOSE and the --grpc/--http of CMD differ";

    const std::vector<std::string> checks =
        All(file.stages.back(), "HEALTHCHECK");
    ASSERT_EQ(checks.size(), 1u) << file.path << ": one HEALTHCHECK";
    FakeCoordinatorView view;
    view.RequireToken("hai5_not_shown_by_the_probe");
    HttpRouter router(&view, "");
    static const std::regex kUrl(R"(https?://[^/\s:]+:([0-9]+)(/\S*))");
    int urls = 0;
    for (std::sregex_iterator it(checks[0].begin(), checks[0].end(), kUrl), end;
         it != end; ++it, ++urls) {
      EXPECT_EQ(std::stoi((*it)[1]), http)
          << file.path << ": HEALTHCHECK probes another port than --http";
      HttpRequest request(boost::beast::http::verb::get, (*it)[2].str(), 11);
      EXPECT_EQ(router.Handle(request).result(), boost::beast::http::status::ok)
          << file.path << ": the router does not serve " << (*it)[2]
          << " without a token";
    }
    EXPECT_GT(urls, 0) << file.path << ": HEALTHCHECK probes no URL";
  }
}

// The runtime stages install what this script lists: it must name the
// packages of the libraries a binary really loads, and only packages.
TEST(ContainerFiles, RuntimePackagesAreTheOwnersOfTheLinkedLibraries) {
  if (RunProgram("/usr/bin/dpkg-query", {"--version"}).exit_code != 0) {
    GTEST_SKIP() << "no dpkg-query: not a Debian-like system";
  }
  const std::string script = std::string(HPCAI500_SOURCE_DIR) +
                             "/deploy/containers/runtime-packages.sh";
  RunResult listed =
      RunProgram(script, {std::string(HPCAI500_BINARY_DIR) + "/bin/hpcai500d"});
  ASSERT_EQ(listed.exit_code, 0) << listed.output;
  std::istringstream lines(listed.output);
  std::set<std::string> packages;
  for (std::string line; std::getline(lines, line);) {
    EXPECT_TRUE(std::regex_match(line, std::regex("[a-z0-9][a-z0-9+.-]+")))
        << "not a package name: '" << line << "'";
    packages.insert(line);
  }
  EXPECT_TRUE(packages.count("libc6") > 0) << listed.output;
  // gRPC's and SQLite's runtime libraries, whatever their versioned names.
  for (const char* prefix : {"libgrpc++", "libsqlite3-"}) {
    EXPECT_TRUE(std::any_of(packages.begin(), packages.end(),
                            [&](const std::string& package) {
                              return package.rfind(prefix, 0) == 0;
                            }))
        << "no " << prefix << "* in:\n"
        << listed.output;
  }
  for (const std::string& package : packages) {
    EXPECT_EQ(package.find("-dev"), std::string::npos)
        << package << " is a development package";
  }
  EXPECT_EQ(RunProgram(script, {}).exit_code, 64);
  EXPECT_EQ(RunProgram(script, {"/no/such/binary"}).exit_code, 66);
}

}  // namespace
}  // namespace hpcai500::deploy_test
