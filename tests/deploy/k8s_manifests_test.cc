// The Kubernetes manifests of deploy/k8s: they parse, run the images
// deploy/containers builds, agree on ports from the coordinator's flags to
// its Service, probe what the router serves without a token, mount what they
// declare (the database volume where --db points, the coordinator's token
// Secret and each agent's token file of its node), and give the agents GPUs and
// the node's network. No cluster is at hand, so the files are read and
// cross-checked.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/yaml_text.h"
#include "server/http/router.h"
#include "tests/deploy/deploy_files.h"
#include "tests/server/http/fake_coordinator_view.h"

namespace hpcai500::deploy_test {
namespace {

std::vector<std::string> Strings(const YAML::Node& list) {
  std::vector<std::string> out;
  for (const YAML::Node& item : list) out.push_back(item.as<std::string>());
  return out;
}

// A map of strings (labels, selectors) as a value to compare.
std::map<std::string, std::string> StringMap(const YAML::Node& map) {
  std::map<std::string, std::string> out;
  for (const auto& item : map) {
    out[item.first.as<std::string>()] = item.second.as<std::string>();
  }
  return out;
}

// The directory part of a path ("/a/b/c" -> "/a/b").
std::string Dir(const std::string& path) {
  return path.substr(0, path.rfind('/'));
}
std::string Base(const std::string& path) {
  return path.substr(path.rfind('/') + 1);
}

// "registry.example/x/hpcai500d:0.1.0" -> "hpcai500d".
std::string ImageName(std::string image) {
  image = image.substr(0, image.find('@'));
  const size_t slash = image.rfind('/');
  const size_t colon = image.rfind(':');
  if (colon != std::string::npos &&
      (slash == std::string::npos || colon > slash)) {
    image = image.substr(0, colon);
  }
  return Base(image);
}

std::set<std::string> ImageTitles() {
  std::set<std::string> titles;
  for (const Dockerfile& file : AllDockerfiles()) titles.insert(file.Title());
  return titles;
}

// Container `container`'s port named or numbered `port`; -1 when none.
int ContainerPort(const YAML::Node& container, const YAML::Node& port) {
  for (const YAML::Node& p : container["ports"]) {
    if (p["name"].as<std::string>("") == port.as<std::string>() ||
        p["containerPort"].as<std::string>() == port.as<std::string>()) {
      return p["containerPort"].as<int>();
    }
  }
  return -1;
}

class K8sManifests : public ::testing::Test {
 protected:
  void SetUp() override {
    manifests_ = LoadManifests();
    ASSERT_FALSE(manifests_.empty());
    const std::string file = "deploy/k8s/kustomization.yaml";
    auto kustomization = LoadYamlDocuments(ReadRepoFile(file), file);
    ASSERT_TRUE(kustomization.ok() && kustomization->size() == 1);
    kustomization_ = (*kustomization)[0];
    deployment_ = FindManifest(manifests_, "Deployment", "hpcai500d");
    daemonset_ = FindManifest(manifests_, "DaemonSet", "hpcai500-agent");
    service_ = FindManifest(manifests_, "Service", "hpcai500d");
    ASSERT_TRUE(deployment_.IsDefined() && daemonset_.IsDefined() &&
                service_.IsDefined());
    coordinator_ = Container(deployment_);
    agent_ = Container(daemonset_);
    coordinator_args_ = Strings(coordinator_["args"]);
    agent_args_ = Strings(agent_["args"]);
  }

  static YAML::Node Container(const YAML::Node& workload) {
    const YAML::Node containers =
        workload["spec"]["template"]["spec"]["containers"];
    EXPECT_EQ(containers.size(), 1u)
        << workload["metadata"]["name"].as<std::string>();
    return containers[0];
  }

  // The pod volume named `name` of `workload`, undefined when none.
  static YAML::Node Volume(const YAML::Node& workload,
                           const std::string& name) {
    for (const YAML::Node& volume :
         workload["spec"]["template"]["spec"]["volumes"]) {
      if (volume["name"].as<std::string>() == name) return volume;
    }
    return YAML::Node(YAML::NodeType::Undefined);
  }

  // The volume mounted at `dir` in the container, undefined when none.
  static YAML::Node VolumeMountedAt(const YAML::Node& workload,
                                    const std::string& dir) {
    for (const YAML::Node& mount : Container(workload)["volumeMounts"]) {
      if (mount["mountPath"].as<std::string>() == dir) {
        return Volume(workload, mount["name"].as<std::string>());
      }
    }
    return YAML::Node(YAML::NodeType::Undefined);
  }

  // The keys of Secret `name` (data and stringData).
  std::set<std::string> SecretKeys(const std::string& name) {
    std::set<std::string> keys;
    const YAML::Node secret = FindManifest(manifests_, "Secret", name);
    for (const char* field : {"data", "stringData"}) {
      for (const auto& key : secret[field]) {
        keys.insert(key.first.as<std::string>());
      }
    }
    return keys;
  }

  // The downward-API field an env variable $(NAME) of the agent reads.
  std::string AgentEnvField(const std::string& reference) {
    for (const YAML::Node& env : agent_["env"]) {
      if ("$(" + env["name"].as<std::string>() + ")" == reference) {
        return env["valueFrom"]["fieldRef"]["fieldPath"].as<std::string>("");
      }
    }
    return "";
  }

  std::vector<Manifest> manifests_;
  YAML::Node kustomization_;
  YAML::Node deployment_, daemonset_, service_, coordinator_, agent_;
  std::vector<std::string> coordinator_args_, agent_args_;
};

TEST_F(K8sManifests, EveryFileParsesAndIsListedInTheKustomization) {
  std::set<std::string> listed;
  for (const Manifest& manifest : manifests_) {
    listed.insert(manifest.file);
    EXPECT_TRUE(manifest.node["apiVersion"].IsScalar()) << manifest.file;
    EXPECT_TRUE(manifest.node["kind"].IsScalar()) << manifest.file;
    EXPECT_TRUE(manifest.node["metadata"]["name"].IsScalar()) << manifest.file;
  }
  // Every manifest of the folder is applied: none is left out by mistake.
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(
           std::string(HPCAI500_SOURCE_DIR) + "/deploy/k8s")) {
    const std::string name = entry.path().filename().string();
    if (entry.path().extension() != ".yaml" || name == "kustomization.yaml") {
      continue;
    }
    ++files;
    EXPECT_TRUE(listed.count("deploy/k8s/" + name) > 0)
        << name << " is not a resource of deploy/k8s/kustomization.yaml";
  }
  EXPECT_GE(files, 5);
}

TEST_F(K8sManifests, ImagesAreTheOnesTheContainerFilesBuild) {
  const std::set<std::string> titles = ImageTitles();
  const std::string kustomization = "deploy/k8s/kustomization.yaml";
  std::set<std::string> retagged;
  for (const YAML::Node& image : kustomization_["images"]) {
    const std::string name = image["name"].as<std::string>();
    EXPECT_TRUE(titles.count(name) > 0)
        << kustomization << " retags " << name
        << ", which no deploy/containers file builds";
    retagged.insert(name);
  }
  for (const YAML::Node& workload : {deployment_, daemonset_}) {
    const std::string image = Container(workload)["image"].as<std::string>();
    EXPECT_TRUE(titles.count(ImageName(image)) > 0)
        << workload["metadata"]["name"] << " runs " << image
        << ", which no deploy/containers file builds";
    EXPECT_TRUE(retagged.count(image) > 0)
        << image << " has no entry in " << kustomization << " images";
  }
}

TEST_F(K8sManifests, PortsAgreeFromTheFlagsToTheService) {
  const int grpc = PortOf(FlagValue(coordinator_args_, "--grpc").value_or(""));
  const int http = PortOf(FlagValue(coordinator_args_, "--http").value_or(""));
  std::set<int> container_ports;
  for (const YAML::Node& port : coordinator_["ports"]) {
    container_ports.insert(port["containerPort"].as<int>());
  }
  EXPECT_EQ(container_ports, (std::set<int>{grpc, http}))
      << "containerPorts differ from hpcai500d's --grpc and --http";
  std::set<int> targets;
  for (const YAML::Node& port : service_["spec"]["ports"]) {
    const int target = ContainerPort(coordinator_, port["targetPort"]);
    EXPECT_NE(target, -1) << "Service targetPort " << port["targetPort"]
                          << " is no port of the container";
    targets.insert(target);
  }
  EXPECT_EQ(targets, container_ports);
  const auto pod_labels =
      StringMap(deployment_["spec"]["template"]["metadata"]["labels"]);
  EXPECT_FALSE(pod_labels.empty());
  EXPECT_EQ(StringMap(service_["spec"]["selector"]), pod_labels)
      << "the Service selects other pods than the Deployment's";
  EXPECT_EQ(StringMap(deployment_["spec"]["selector"]["matchLabels"]),
            pod_labels);

  // The agents dial the Service's gRPC port by its name in the namespace.
  const std::string coordinator =
      FlagValue(agent_args_, "--coordinator").value_or("");
  const std::string ns = kustomization_["namespace"].as<std::string>("");
  FindManifest(manifests_, "Namespace", ns);
  const std::string service_name =
      service_["metadata"]["name"].as<std::string>() + "." + ns + ".svc";
  EXPECT_EQ(coordinator.substr(0, coordinator.rfind(':')), service_name);
  int dialed_target = -1;
  for (const YAML::Node& port : service_["spec"]["ports"]) {
    if (port["port"].as<int>() == PortOf(coordinator)) {
      dialed_target = ContainerPort(coordinator_, port["targetPort"]);
    }
  }
  EXPECT_EQ(dialed_target, grpc) << "--coordinator " << coordinator
                                 << " does not reach hpcai500d's --grpc";
}

TEST_F(K8sManifests, ProbesHitWhatTheRouterServesWithoutAToken) {
  const int http = PortOf(FlagValue(coordinator_args_, "--http").value_or(""));
  FakeCoordinatorView view;
  view.RequireToken("hai5_not_shown_by_the_probe");
  HttpRouter router(&view, "");
  for (const char* probe : {"readinessProbe", "livenessProbe"}) {
    const YAML::Node get = coordinator_[probe]["httpGet"];
    ASSERT_TRUE(get.IsMap()) << probe << " is no httpGet";
    EXPECT_EQ(ContainerPort(coordinator_, get["port"]), http)
        << probe << " probes another port than --http";
    HttpRequest request(boost::beast::http::verb::get,
                        get["path"].as<std::string>(), 11);
    EXPECT_EQ(router.Handle(request).result(), boost::beast::http::status::ok)
        << probe << ": the router does not serve " << get["path"]
        << " without a token";
  }
}

TEST_F(K8sManifests, MountsNameDeclaredVolumesAndObjects) {
  for (const YAML::Node& workload : {deployment_, daemonset_}) {
    const std::string name = workload["metadata"]["name"].as<std::string>();
    for (const YAML::Node& mount : Container(workload)["volumeMounts"]) {
      EXPECT_TRUE(Volume(workload, mount["name"].as<std::string>()).IsDefined())
          << name << " mounts undeclared volume " << mount["name"];
    }
    for (const YAML::Node& volume :
         workload["spec"]["template"]["spec"]["volumes"]) {
      if (volume["secret"]) {
        FindManifest(manifests_, "Secret",
                     volume["secret"]["secretName"].as<std::string>());
      }
      if (volume["persistentVolumeClaim"]) {
        FindManifest(
            manifests_, "PersistentVolumeClaim",
            volume["persistentVolumeClaim"]["claimName"].as<std::string>());
      }
    }
  }
}

TEST_F(K8sManifests, TheDatabaseLivesOnItsClaimWithOneWriter) {
  EXPECT_EQ(deployment_["spec"]["replicas"].as<int>(), 1);
  EXPECT_EQ(deployment_["spec"]["strategy"]["type"].as<std::string>(""),
            "Recreate")
      << "a rolling update would start a second hpcai500d on the database";
  const std::string db = FlagValue(coordinator_args_, "--db").value_or("");
  ASSERT_FALSE(db.empty()) << "hpcai500d has no --db";
  const YAML::Node volume = VolumeMountedAt(deployment_, Dir(db));
  ASSERT_TRUE(volume.IsDefined()) << "nothing is mounted at " << Dir(db);
  ASSERT_TRUE(volume["persistentVolumeClaim"].IsMap())
      << Dir(db) << " is not a PersistentVolumeClaim";
  const YAML::Node claim = FindManifest(
      manifests_, "PersistentVolumeClaim",
      volume["persistentVolumeClaim"]["claimName"].as<std::string>());
  EXPECT_EQ(Strings(claim["spec"]["accessModes"]),
            std::vector<std::string>{"ReadWriteOnce"});
}

TEST_F(K8sManifests, CoordinatorTokenIsASecretKeyAndEachAgentsIsItsNodesFile) {
  // The coordinator's shared token: a key of the Secret mounted there.
  const std::string shared =
      FlagValue(coordinator_args_, "--token-file").value_or("");
  ASSERT_FALSE(shared.empty()) << "hpcai500d has no --token-file";
  const YAML::Node coordinator_volume =
      VolumeMountedAt(deployment_, Dir(shared));
  ASSERT_TRUE(coordinator_volume["secret"].IsMap())
      << Dir(shared) << " is no Secret volume";
  EXPECT_TRUE(
      SecretKeys(coordinator_volume["secret"]["secretName"].as<std::string>())
          .count(Base(shared)) > 0)
      << Base(shared) << " is no key of the Secret mounted at " << Dir(shared);

  // Each agent's token: a file of its own node, never a Secret (the pods of
  // a DaemonSet all mount the same Secret, so each would read every node's
  // token).
  const std::string own = FlagValue(agent_args_, "--token-file").value_or("");
  ASSERT_FALSE(own.empty()) << "the agent has no --token-file";
  const YAML::Node agent_volume = VolumeMountedAt(daemonset_, own);
  ASSERT_TRUE(agent_volume["hostPath"].IsMap())
      << own << " is no file of the node";
  EXPECT_EQ(agent_volume["hostPath"]["type"].as<std::string>(""), "File");
  const YAML::Node pod = daemonset_["spec"]["template"]["spec"];
  for (const YAML::Node& volume : pod["volumes"]) {
    EXPECT_FALSE(static_cast<bool>(volume["secret"]))
        << "agents mount the Secret of volume " << volume["name"]
        << ": every node would read it";
  }
  EXPECT_EQ(AgentEnvField(FlagValue(agent_args_, "--name").value_or("")),
            "spec.nodeName");
}

TEST_F(K8sManifests, AgentsGetGpusAndTheNodesNetwork) {
  const YAML::Node gpus = agent_["resources"]["limits"]["nvidia.com/gpu"];
  ASSERT_TRUE(gpus.IsScalar()) << "the DaemonSet requests no nvidia.com/gpu";
  EXPECT_GT(gpus.as<int>(), 0);
  const YAML::Node pod = daemonset_["spec"]["template"]["spec"];
  EXPECT_TRUE(pod["hostNetwork"].as<bool>(false))
      << "NCCL and Gloo need the node's interfaces";
  EXPECT_EQ(pod["dnsPolicy"].as<std::string>(""), "ClusterFirstWithHostNet")
      << "without it a hostNetwork pod cannot resolve the Service";
  const std::string address = FlagValue(agent_args_, "--address").value_or("");
  EXPECT_TRUE(AgentEnvField(address) == "status.hostIP" ||
              FlagValue(agent_args_, "--iface").has_value())
      << "other nodes must reach the agent at the node's address";
}

TEST_F(K8sManifests, PodsRunAsTheUserTheirImageCreates) {
  for (const YAML::Node& workload : {deployment_, daemonset_}) {
    const YAML::Node security =
        workload["spec"]["template"]["spec"]["securityContext"];
    EXPECT_TRUE(security["runAsNonRoot"].as<bool>(false));
    const std::string image =
        ImageName(Container(workload)["image"].as<std::string>());
    // The uid the image's useradd gives (or the image it builds on).
    const std::vector<Dockerfile> files = AllDockerfiles();
    const Dockerfile* file = ByTitle(files, image);
    ASSERT_NE(file, nullptr) << image;
    const std::string runs = ImageRuns(files, *file);
    EXPECT_NE(runs.find("--uid " + security["runAsUser"].as<std::string>("")),
              std::string::npos)
        << image << " creates no user with uid " << security["runAsUser"];
  }
}

TEST_F(K8sManifests, ArgsAreFlagsTheBinariesAccept) {
  if (!IsBuilt("hpcai500d") || !IsBuilt("hpcai500-agent")) {
    GTEST_SKIP() << "hpcai500d or hpcai500-agent is not built";
  }
  // hpcai500d parses the whole line (values too) before it honours --help.
  std::vector<std::string> args = coordinator_args_;
  args.push_back("--help");
  RunResult parsed = RunBinary("hpcai500d", args);
  EXPECT_EQ(parsed.exit_code, 0) << parsed.output;
  // The agent prints its usage on --help before parsing: compare names.
  RunResult help = RunBinary("hpcai500-agent", {"--help"});
  ASSERT_EQ(help.exit_code, 0);
  const std::vector<std::string> known = FlagsIn(help.output);
  for (const std::string& arg : agent_args_) {
    if (arg.rfind("--", 0) != 0) continue;
    EXPECT_TRUE(std::find(known.begin(), known.end(), arg) != known.end())
        << "hpcai500-agent has no flag " << arg;
  }
}

}  // namespace
}  // namespace hpcai500::deploy_test
