#include "common/inventory.h"

#include <gtest/gtest.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "tests/common/test_inventory.h"

namespace hpcai500 {
namespace {

using ::hpcai500::testing::TwoH200Inventory;

std::string MessageOf(const v1::Inventory& inventory) {
  absl::Status status = CheckInventory(inventory);
  if (status.ok()) return "accepted";
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  return std::string(status.message());
}

TEST(Inventory, AcceptsARealNodeAndAnEmptyOne) {
  EXPECT_EQ(MessageOf(TwoH200Inventory()), "accepted");
  EXPECT_EQ(MessageOf(v1::Inventory()), "accepted");
}

TEST(Inventory, RefusesBeyondTheBoundsNamingTheField) {
  v1::Inventory many = TwoH200Inventory();
  for (int i = 2; i <= kMaxInventoryDevices; ++i)
    *many.add_devices() = many.devices(0);
  EXPECT_EQ(MessageOf(many),
            absl::StrCat("inventory: ", kMaxInventoryDevices + 1,
                         " devices; at most ", kMaxInventoryDevices));

  v1::Inventory long_model = TwoH200Inventory();
  long_model.mutable_devices(1)->set_model(std::string(300, 'x'));
  EXPECT_EQ(MessageOf(long_model),
            "inventory: device 1 model is 300 bytes; at most 256");

  v1::Inventory versions = TwoH200Inventory();
  for (int i = 0; i < kMaxInventoryVersions; ++i) {
    (*versions.mutable_versions())[absl::StrCat("lib", i)] = "1";
  }
  EXPECT_EQ(MessageOf(versions),
            absl::StrCat("inventory: ", kMaxInventoryVersions + 2,
                         " versions; at most ", kMaxInventoryVersions));

  v1::Inventory long_version = TwoH200Inventory();
  (*long_version.mutable_versions())["mpi"] = std::string(257, 'v');
  EXPECT_EQ(MessageOf(long_version),
            "inventory: version 'mpi' is 257 bytes; at most 256");

  v1::Inventory escape = TwoH200Inventory();
  escape.set_cpu_model("Xeon\x1b[2J");
  EXPECT_EQ(MessageOf(escape),
            "inventory: cpu_model holds a control character");

  v1::Inventory negative = TwoH200Inventory();
  negative.mutable_devices(0)->set_memory_bytes(-1);
  EXPECT_EQ(MessageOf(negative),
            "inventory: device 0 memory_bytes must not be negative, got -1");

  v1::Inventory links = TwoH200Inventory();
  links.mutable_devices(1)->set_nvlink_links(kMaxInventoryNvLinks + 1);
  EXPECT_EQ(MessageOf(links),
            "inventory: device 1 has 65 NVLink links; at most 64");
  links.mutable_devices(1)->set_nvlink_links(-2);
  EXPECT_EQ(MessageOf(links),
            "inventory: device 1 nvlink_links must not be negative, got -2");

  v1::Inventory unnamed = TwoH200Inventory();
  (*unnamed.mutable_versions())[""] = "1";
  EXPECT_EQ(MessageOf(unnamed), "inventory: a version has no name");
}

TEST(Inventory, FitCutsWhatAnAgentFoundToWhatTheCoordinatorAccepts) {
  v1::Inventory inventory = TwoH200Inventory();
  for (int i = 2; i < 100; ++i) *inventory.add_devices() = inventory.devices(0);
  for (int i = 0; i < 40; ++i) {
    (*inventory.mutable_versions())[absl::StrCat("lib", 10 + i)] = "1";
  }
  (*inventory.mutable_versions())[""] = "nameless";
  // 255 ASCII bytes, then a 2-byte character that the cut must not split.
  inventory.set_cpu_model(std::string(255, 'c') + "\xc3\xa9" + "tail");
  inventory.set_driver_version("550\n");
  inventory.set_cpu_cores(-4);
  inventory.mutable_devices(0)->set_nvlink_links(1000);
  inventory.mutable_devices(1)->set_nvlink_links(-1);
  ASSERT_NE(MessageOf(inventory), "accepted");

  FitInventory(&inventory);
  EXPECT_EQ(MessageOf(inventory), "accepted");
  EXPECT_EQ(inventory.devices_size(), kMaxInventoryDevices);
  EXPECT_EQ(inventory.versions_size(), kMaxInventoryVersions);
  // The first names in order stay: hpcai500, lib10, ...
  EXPECT_EQ(inventory.versions().count("hpcai500"), 1u);
  EXPECT_EQ(inventory.versions().count(""), 0u);
  EXPECT_EQ(inventory.cpu_model(), std::string(255, 'c'));
  EXPECT_EQ(inventory.driver_version(), "550 ");
  EXPECT_EQ(inventory.cpu_cores(), 0);
  EXPECT_EQ(inventory.devices(0).nvlink_links(), kMaxInventoryNvLinks);
  EXPECT_EQ(inventory.devices(1).nvlink_links(), 0);
}

}  // namespace
}  // namespace hpcai500
