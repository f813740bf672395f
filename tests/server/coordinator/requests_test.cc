#include "server/coordinator/requests.h"

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/inventory.h"
#include "common/printable.h"
#include "common/request_id.h"
#include "gtest/gtest.h"

namespace hpcai500 {
namespace {

std::string SpecYaml(int repetitions) {
  return absl::StrCat(
      "name: smoke\nworkload: image_classification\n"
      "config: fashion_mnist_smoke\nlevel: free\nnodes: 1\n"
      "ranks_per_node: 1\ndevice: cpu\nbatch_size: 64\nprecision: fp32\n"
      "seed: 42\nsystem: test-box\nrepetitions: ",
      repetitions, "\n");
}

TEST(Requests, ASubmissionBecomesOneRunPerRepetitionWithItsOwnSeed) {
  absl::StatusOr<std::vector<v1::RunSpec>> runs =
      ParseSubmission(SpecYaml(3), Registry::Builtin());
  ASSERT_TRUE(runs.ok()) << runs.status();
  ASSERT_EQ(runs->size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ((*runs)[i].seed(), 42 + i);
    EXPECT_EQ((*runs)[i].repetitions(), 3);
  }
}

TEST(Requests, RefusesTooManyRepetitionsAndAnOversizedSpec) {
  EXPECT_TRUE(absl::IsInvalidArgument(
      ParseSubmission(SpecYaml(101), Registry::Builtin()).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(
      ParseSubmission(std::string((1 << 20) + 1, '#'), Registry::Builtin())
          .status()));
}

TEST(Requests, RequestIdIsEmptyOrAShortPlainWord) {
  EXPECT_TRUE(ValidateRequestId("").ok());  // none
  EXPECT_TRUE(ValidateRequestId("0f9a5c3e8d7b41a2b6c4e1d0f3a2b5c6").ok());
  EXPECT_TRUE(ValidateRequestId("ci:pipeline-812.job_3").ok());
  EXPECT_TRUE(ValidateRequestId(std::string(kMaxRequestIdBytes, 'a')).ok());
  EXPECT_TRUE(absl::IsInvalidArgument(
      ValidateRequestId(std::string(kMaxRequestIdBytes + 1, 'a'))));
  const absl::Status spaced = ValidateRequestId("two words");
  EXPECT_TRUE(absl::IsInvalidArgument(spaced));
  EXPECT_NE(spaced.message().find("'request_id'"), std::string::npos)
      << spaced.message();
  EXPECT_TRUE(absl::IsInvalidArgument(ValidateRequestId("a\nb")));
}

TEST(Requests, RegisterNeedsAPlainNameAndSlotsInRange) {
  v1::Register request;
  request.set_name("node-1.rack_2");
  request.set_slots(8);
  EXPECT_TRUE(ValidateRegister(request).ok());
  request.set_name("bad name");
  EXPECT_TRUE(absl::IsInvalidArgument(ValidateRegister(request)));
  request.set_name(std::string(kMaxNodeNameBytes + 1, 'a'));
  EXPECT_TRUE(absl::IsInvalidArgument(ValidateRegister(request)));
  request.set_name("..");
  EXPECT_TRUE(absl::IsInvalidArgument(ValidateRegister(request)));
  request.set_name("node\x1b[2J");
  const absl::Status escaped = ValidateRegister(request);
  EXPECT_TRUE(absl::IsInvalidArgument(escaped));
  EXPECT_EQ(std::string(escaped.message()).find('\x1b'), std::string::npos)
      << escaped.message();
  request.set_name("a");
  request.set_slots(0);
  EXPECT_TRUE(absl::IsInvalidArgument(ValidateRegister(request)));
  request.set_slots(1);
  request.set_gpus(-1);
  EXPECT_TRUE(absl::IsInvalidArgument(ValidateRegister(request)));
}

TEST(Requests, RegisterRefusesLaunchPathsAndIfaceBeyondTheirBounds) {
  v1::Register request;
  request.set_name("a");
  request.set_slots(1);
  request.set_workdir("/srv/hpcai500");
  request.set_checkpoint_root("/shared/checkpoints");
  request.set_iface("ib0");
  EXPECT_TRUE(ValidateRegister(request).ok());
  // What other agents are handed in a launcher run: never unbounded.
  request.set_workdir("/" + std::string(kMaxAgentPathBytes, 'w'));
  EXPECT_EQ(ValidateRegister(request).message(),
            "register: workdir is 4097 bytes; at most 4096");
  request.set_workdir("/srv/hpcai500");
  request.set_checkpoint_root(std::string(kMaxAgentPathBytes + 1, 'c'));
  EXPECT_EQ(ValidateRegister(request).message(),
            "register: checkpoint_root is 4097 bytes; at most 4096");
  request.set_checkpoint_root("/shared/checkpoints");
  request.set_iface(std::string(kMaxAddressBytes + 1, 'i'));
  const absl::Status iface = ValidateRegister(request);
  EXPECT_TRUE(absl::IsInvalidArgument(iface));
  EXPECT_EQ(iface.message(), "register: iface is 257 bytes; at most 256");
}

TEST(Requests, RegisterRefusesControlCharactersInWhatIsPrinted) {
  v1::Register request;
  request.set_name("a");
  request.set_slots(1);
  request.set_address("10.0.0.1");
  (*request.mutable_labels())["rack"] = "r1";
  ASSERT_TRUE(ValidateRegister(request).ok());
  // A newline would forge a log line; ESC repaints a terminal.
  request.set_address("10.0.0.1\nI 2026-12-04T00:00:00Z hpcai500d forged");
  EXPECT_EQ(ValidateRegister(request).message(),
            "register: address '10.0.0.1\\nI 2026-12-04T00:00:00Z hpcai500d "
            "forged' holds a control character");
  request.set_address("10.0.0.1");
  (*request.mutable_labels())["rack"] = "\x1b[2Jr1";
  EXPECT_EQ(ValidateRegister(request).message(),
            "register: label rack '\\x1b[2Jr1' holds a control character");
  (*request.mutable_labels())["rack"] =
      "r\xc2\x9b"
      "1";  // C1 CSI, UTF-8
  EXPECT_TRUE(absl::IsInvalidArgument(ValidateRegister(request)));
  (*request.mutable_labels())["rack"] = "r\xc3\xa9";  // é: printable
  EXPECT_TRUE(ValidateRegister(request).ok());
  const std::vector<std::function<void(v1::Register&)>> sets = {
      [](v1::Register& r) { r.set_hostname("x\ty"); },
      [](v1::Register& r) { r.set_workdir("/x\ry"); },
      [](v1::Register& r) { r.set_checkpoint_root("/x\x7fy"); },
      [](v1::Register& r) { r.set_iface("ib\x01"); }};
  for (const auto& set : sets) {
    v1::Register bad = request;
    set(bad);
    EXPECT_TRUE(absl::IsInvalidArgument(ValidateRegister(bad)));
  }
}

TEST(Requests, RegisterRefusesAnInventoryBeyondItsBoundsNamingTheField) {
  v1::Register request;
  request.set_name("gpu-1");
  request.set_slots(2);
  v1::Inventory* inventory = request.mutable_inventory();
  inventory->set_cpu_model("AMD EPYC 9654 96-Core Processor");
  v1::Device* device = inventory->add_devices();
  device->set_kind("cuda");
  device->set_model("NVIDIA H200");
  (*inventory->mutable_versions())["nccl"] = "2.21.5";
  EXPECT_TRUE(ValidateRegister(request).ok());

  for (int i = 1; i <= kMaxInventoryDevices; ++i) {
    *inventory->add_devices() = *device;
  }
  absl::Status status = ValidateRegister(request);
  EXPECT_TRUE(absl::IsInvalidArgument(status));
  EXPECT_EQ(status.message(), "register: inventory: 65 devices; at most 64");

  inventory->mutable_devices()->DeleteSubrange(1, kMaxInventoryDevices);
  inventory->set_driver_version(std::string(kMaxInventoryTextBytes + 1, '5'));
  status = ValidateRegister(request);
  EXPECT_TRUE(absl::IsInvalidArgument(status));
  EXPECT_EQ(status.message(),
            "register: inventory: driver_version is 257 bytes; at most 256");

  inventory->clear_driver_version();
  for (int i = 0; i < kMaxInventoryVersions; ++i) {
    (*inventory->mutable_versions())[absl::StrCat("lib", i)] = "1.0";
  }
  status = ValidateRegister(request);
  EXPECT_TRUE(absl::IsInvalidArgument(status));
  EXPECT_EQ(status.message(), "register: inventory: 33 versions; at most 32");
}

TEST(Requests, ListRunsFiltersThatNoRunMatchesAreRefused) {
  v1::ListRunsRequest request;
  EXPECT_TRUE(ValidateListRunsRequest(request).ok());
  request.set_name(std::string(129, 'n'));
  EXPECT_TRUE(absl::IsInvalidArgument(ValidateListRunsRequest(request)));
  request.clear_name();
  request.set_before_id(-1);
  EXPECT_TRUE(absl::IsInvalidArgument(ValidateListRunsRequest(request)));
}

TEST(Requests, ListRunsHistoryFiltersAreCheckedNamingTheField) {
  v1::ListRunsRequest request;
  request.set_user("alice");
  request.set_queue("gpu");
  request.set_since_ms(1000);
  request.set_until_ms(2000);
  EXPECT_TRUE(ValidateListRunsRequest(request).ok());
  for (const auto& [change, field] : std::vector<
           std::pair<std::function<void(v1::ListRunsRequest&)>, std::string>>{
           {[](v1::ListRunsRequest& r) { r.set_user(std::string(129, 'u')); },
            "'user'"},
           {[](v1::ListRunsRequest& r) { r.set_queue(std::string(129, 'q')); },
            "'queue'"},
           {[](v1::ListRunsRequest& r) { r.set_since_ms(-1); }, "'since_ms'"},
           {[](v1::ListRunsRequest& r) { r.set_until_ms(-5); }, "'until_ms'"},
           {[](v1::ListRunsRequest& r) { r.set_until_ms(1000); },
            "'until_ms' (1000) must be after 'since_ms' (1000)"}}) {
    v1::ListRunsRequest bad = request;
    change(bad);
    const absl::Status status = ValidateListRunsRequest(bad);
    EXPECT_TRUE(absl::IsInvalidArgument(status)) << field;
    EXPECT_NE(std::string(status.message()).find(field), std::string::npos)
        << status;
  }
}

TEST(Requests, RendezvousHostFallsBackToTheNodeAddressAndChecksThePort) {
  v1::Node node;
  node.set_name("a");
  node.set_address("10.0.0.1");
  v1::PortReserved port;
  port.set_port(29500);
  EXPECT_EQ(*RendezvousHost(port, node), "10.0.0.1");
  port.set_host("a.cluster");
  EXPECT_EQ(*RendezvousHost(port, node), "a.cluster");
  port.set_port(70000);
  EXPECT_EQ(RendezvousHost(port, node).status().message(),
            "node a could not reserve a port: port 70000");
  port.set_port(29500);
  port.set_error("no free port");
  EXPECT_EQ(RendezvousHost(port, node).status().message(),
            "node a could not reserve a port: no free port");
  port.clear_error();
  port.clear_host();
  node.clear_address();
  EXPECT_EQ(RendezvousHost(port, node).status().message(),
            "node a reported no usable rendezvous address");
}

}  // namespace
}  // namespace hpcai500
