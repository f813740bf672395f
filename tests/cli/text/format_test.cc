#include "cli/text/format.h"

#include "gtest/gtest.h"
#include "tests/common/test_inventory.h"

namespace hpcai500 {
namespace {

using ::hpcai500::testing::TwoH200Inventory;

TEST(FormatFlops, PicksTheDecimalUnitWithTwoDecimals) {
  EXPECT_EQ(FormatFlops(0), "0.00 FLOPS");
  EXPECT_EQ(FormatFlops(950), "950.00 FLOPS");
  EXPECT_EQ(FormatFlops(1.234e12), "1.23 TFLOPS");
  EXPECT_EQ(FormatFlops(45.6e9), "45.60 GFLOPS");
  EXPECT_EQ(FormatFlops(2.5e15), "2.50 PFLOPS");
  EXPECT_EQ(FormatFlops(3e21), "3000.00 EFLOPS");
}

TEST(FormatFlops, RoundsUpIntoTheNextUnitRatherThanPrinting1000) {
  EXPECT_EQ(FormatFlops(999.999e6), "1.00 GFLOPS");
}

TEST(FormatTimeMs, FormatsInTheZoneAndDashesZero) {
  EXPECT_EQ(FormatTimeMs(0, absl::UTCTimeZone()), "-");
  EXPECT_EQ(FormatTimeMs(1700000000123, absl::UTCTimeZone()),
            "2023-11-14 22:13:20");
}

TEST(FormatTable, PadsColumnsAndAlignsRightOnRequest) {
  std::string table =
      FormatTable({"id", "name"}, {{"7", "a"}, {"12", "longer"}},
                  /*right_aligned=*/{0});
  EXPECT_EQ(table,
            "id  name\n"
            " 7  a\n"
            "12  longer\n");
}

TEST(FormatBytes, PicksTheBinaryUnitWholeFromTen) {
  EXPECT_EQ(FormatBytes(512), "512B");
  EXPECT_EQ(FormatBytes(int64_t{141} << 30), "141GiB");
  EXPECT_EQ(FormatBytes(int64_t{143771} << 20), "140GiB");  // a real H200
  EXPECT_EQ(FormatBytes(int64_t{3} << 39), "1.5TiB");
  EXPECT_EQ(FormatBytes(int64_t{2} << 30), "2GiB");
  EXPECT_EQ(FormatBytes((int64_t{1} << 30) - 1), "1GiB");
}

TEST(FormatDevices, GroupsEqualDevicesOrShowsTheCpu) {
  v1::Inventory inventory = TwoH200Inventory();
  EXPECT_EQ(FormatDevices(inventory), "2x NVIDIA H200 141GiB");
  v1::Device* other = inventory.add_devices();
  other->set_kind("cuda");
  other->set_model("NVIDIA A100-SXM4-80GB");
  other->set_memory_bytes(int64_t{81920} << 20);
  *inventory.add_devices() = inventory.devices(0);
  EXPECT_EQ(FormatDevices(inventory),
            "3x NVIDIA H200 141GiB, 1x NVIDIA A100-SXM4-80GB 80GiB");

  inventory.clear_devices();
  EXPECT_EQ(FormatDevices(inventory),
            "AMD EPYC 9654 96-Core Processor (192 cores)");
  inventory.clear_cpu_model();
  EXPECT_EQ(FormatDevices(inventory), "192 cores");
  EXPECT_EQ(FormatDevices(v1::Inventory()), "-");
}

TEST(FormatDevices, ShowsActiveNvLinksWhereAGpuHasAny) {
  v1::Inventory inventory = TwoH200Inventory();
  inventory.mutable_devices(0)->set_nvlink_links(18);
  inventory.mutable_devices(1)->set_nvlink_links(18);
  EXPECT_EQ(FormatDevices(inventory), "2x NVIDIA H200 141GiB (18 NVLinks)");
  inventory.mutable_devices(1)->set_nvlink_links(1);
  EXPECT_EQ(FormatDevices(inventory),
            "1x NVIDIA H200 141GiB (18 NVLinks), 1x NVIDIA H200 141GiB (1 "
            "NVLink)");
  inventory.mutable_devices(1)->set_nvlink_links(0);
  EXPECT_EQ(FormatDevices(inventory),
            "1x NVIDIA H200 141GiB (18 NVLinks), 1x NVIDIA H200 141GiB");
}

TEST(FormatInventory, OneLineOfDevicesDriverHostAndSortedVersions) {
  EXPECT_EQ(FormatInventory(TwoH200Inventory()),
            "2x NVIDIA H200 141GiB, driver 550.54.15; AMD EPYC 9654 "
            "96-Core Processor (192 cores), 1.5TiB; hpcai500 0.1.0, "
            "nccl 2.21.5");
  v1::Inventory cpu;
  cpu.set_memory_bytes(int64_t{16} << 30);
  EXPECT_EQ(FormatInventory(cpu), "16GiB");
  EXPECT_EQ(FormatInventory(v1::Inventory()), "-");
}

}  // namespace
}  // namespace hpcai500
