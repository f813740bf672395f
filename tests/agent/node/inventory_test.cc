// The node inventory: /proc and os-release parsed, GPUs and libraries read
// through stand-ins of NVML, NCCL and OpenMPI.
#include "agent/node/inventory.h"

#include <string>

#include "common/inventory.h"
#include "gtest/gtest.h"
#include "tests/agent/test_util.h"

namespace hpcai500::agent {
namespace {

// The head of an x86 /proc/cpuinfo (one processor's block of many).
constexpr char kX86Cpuinfo[] = R"(processor	: 0
vendor_id	: AuthenticAMD
cpu family	: 25
model		: 17
model name	: AMD EPYC 9654 96-Core Processor
stepping	: 1
cpu MHz		: 2400.000
cpu cores	: 96

processor	: 1
vendor_id	: AuthenticAMD
model name	: AMD EPYC 9654 96-Core Processor
)";

// POWER9 names its model in "cpu".
constexpr char kPowerCpuinfo[] = R"(processor	: 0
cpu		: POWER9, altivec supported
clock		: 3800.000000MHz
revision	: 2.2 (pvr 004e 1202)
)";

constexpr char kMeminfo[] = R"(MemTotal:       16303960 kB
MemFree:         1234567 kB
MemAvailable:    9876543 kB
)";

constexpr char kOsRelease[] = R"txt(PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"
NAME="Debian GNU/Linux"
VERSION_ID="12"
ID=debian
)txt";

TEST(Inventory, ParsesTheCpuModelOfEachArchitecture) {
  EXPECT_EQ(ParseCpuModel(kX86Cpuinfo), "AMD EPYC 9654 96-Core Processor");
  EXPECT_EQ(ParseCpuModel(kPowerCpuinfo), "POWER9, altivec supported");
  EXPECT_EQ(ParseCpuModel("processor : 0\nBogoMIPS : 50.00\n"), "");
  EXPECT_EQ(ParseCpuModel(""), "");
}

TEST(Inventory, ParsesMemTotalInBytes) {
  EXPECT_EQ(ParseMemTotalBytes(kMeminfo), int64_t{16303960} * 1024);
  EXPECT_EQ(ParseMemTotalBytes("MemFree: 1 kB\n"), 0);
  EXPECT_EQ(ParseMemTotalBytes("MemTotal: lots kB\n"), 0);
  EXPECT_EQ(ParseMemTotalBytes("MemTotal: 12 MB\n"), 0);
  EXPECT_EQ(ParseMemTotalBytes("MemTotal: 99999999999999999999 kB\n"), 0);
}

TEST(Inventory, ParsesThePrettyNameQuotedOrNot) {
  EXPECT_EQ(ParseOsPrettyName(kOsRelease), "Debian GNU/Linux 12 (bookworm)");
  EXPECT_EQ(ParseOsPrettyName("NAME=x\nPRETTY_NAME=Alpine\n"), "Alpine");
  EXPECT_EQ(ParseOsPrettyName("PRETTY_NAME='Rocky Linux 9.3'\n"),
            "Rocky Linux 9.3");
  EXPECT_EQ(ParseOsPrettyName("NAME=x\n"), "");
}

TEST(Inventory, FormatsNcclAndMpiVersions) {
  EXPECT_EQ(FormatNcclVersion(22105), "2.21.5");
  EXPECT_EQ(FormatNcclVersion(2708), "2.7.8");  // before 2.9's new code
  EXPECT_EQ(FormatNcclVersion(0), "");
  EXPECT_EQ(ShortMpiVersion("Open MPI v4.1.4, package: Debian OpenMPI, "
                            "ident: 4.1.4, repo rev: v4.1.4, May 26, 2022"),
            "Open MPI v4.1.4");
  EXPECT_EQ(ShortMpiVersion("MPICH Version:\t4.0.2\nMPICH Release date: x\n"),
            "MPICH Version: 4.0.2");
}

TEST(Inventory, ReadsTwoGpusThroughAFakeNvml) {
  NvmlGpus gpus = ReadNvmlGpus(AGENT_FAKE_NVML);
  ASSERT_TRUE(gpus.loaded) << gpus.why;
  EXPECT_EQ(gpus.driver_version, "550.54.15");
  ASSERT_EQ(gpus.devices.size(), 2u);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(gpus.devices[i].index(), i);
    EXPECT_EQ(gpus.devices[i].kind(), "cuda");
    EXPECT_EQ(gpus.devices[i].model(), "NVIDIA H200");
    EXPECT_EQ(gpus.devices[i].memory_bytes(), int64_t{141} << 30);
  }
}

TEST(Inventory, CountsActiveNvLinksAndNoneWhereNvmlSaysNotSupported) {
  NvmlGpus gpus = ReadNvmlGpus(AGENT_FAKE_NVML);
  ASSERT_TRUE(gpus.loaded) << gpus.why;
  ASSERT_EQ(gpus.devices.size(), 2u);
  EXPECT_EQ(gpus.devices[0].nvlink_links(), 12) << "12 of 18 links active";
  EXPECT_EQ(gpus.devices[1].nvlink_links(), 0) << "NOT_SUPPORTED is none";
}

TEST(Inventory, ANvmlWithoutNvLinkStateStillGivesItsGpusWithNoLinks) {
  NvmlGpus gpus = ReadNvmlGpus(AGENT_FAKE_NVML_NO_NVLINK);
  ASSERT_TRUE(gpus.loaded) << gpus.why;
  ASSERT_EQ(gpus.devices.size(), 2u);
  for (const v1::Device& device : gpus.devices) {
    EXPECT_EQ(device.model(), "NVIDIA H200");
    EXPECT_EQ(device.nvlink_links(), 0);
  }
}

TEST(Inventory, AMissingNvmlGivesNoDevicesAndNoError) {
  NvmlGpus gpus = ReadNvmlGpus("/nonexistent/libnvidia-ml.so.1");
  EXPECT_FALSE(gpus.loaded);
  EXPECT_TRUE(gpus.devices.empty());
  EXPECT_EQ(gpus.driver_version, "");
  EXPECT_NE(gpus.why.find("/nonexistent/libnvidia-ml.so.1"), std::string::npos)
      << gpus.why;

  // A library without NVML's functions, and a driver that is not loaded.
  gpus = ReadNvmlGpus(AGENT_FAKE_COMM_LIBRARIES);
  EXPECT_FALSE(gpus.loaded);
  EXPECT_NE(gpus.why.find("has no nvmlInit_v2"), std::string::npos) << gpus.why;
  gpus = ReadNvmlGpus(AGENT_FAKE_NVML_NO_DRIVER);
  EXPECT_FALSE(gpus.loaded);
  EXPECT_TRUE(gpus.devices.empty());
  EXPECT_NE(gpus.why.find("nvmlInit failed with NVML error 9"),
            std::string::npos)
      << gpus.why;

  InventorySources sources;
  sources.nvml_library = "/nonexistent/libnvidia-ml.so.1";
  v1::Inventory inventory = ReadInventory(sources, gpus);
  EXPECT_EQ(inventory.devices_size(), 0);
  EXPECT_EQ(inventory.driver_version(), "");
  EXPECT_GE(inventory.cpu_cores(), 1) << "the rest is still read";
}

TEST(Inventory, ReadsEachSourceAndCutsToTheCoordinatorsBounds) {
  TempDir dir;
  InventorySources sources;
  sources.cpuinfo = dir.path() + "/cpuinfo";
  sources.meminfo = dir.path() + "/meminfo";
  sources.os_release = dir.path() + "/os-release";
  sources.nvml_library = AGENT_FAKE_NVML;
  sources.nccl_library = AGENT_FAKE_COMM_LIBRARIES;
  sources.mpi_library = AGENT_FAKE_COMM_LIBRARIES;
  // A model name past the bound, as a hostile or broken file might hold.
  AppendToFile(sources.cpuinfo, "model name : " + std::string(300, 'x') + "\n");
  AppendToFile(sources.meminfo, kMeminfo);
  AppendToFile(sources.os_release, kOsRelease);

  v1::Inventory inventory =
      ReadInventory(sources, ReadNvmlGpus(sources.nvml_library));
  EXPECT_EQ(inventory.cpu_model(), std::string(kMaxInventoryTextBytes, 'x'));
  EXPECT_GE(inventory.cpu_cores(), 1);
  EXPECT_EQ(inventory.memory_bytes(), int64_t{16303960} * 1024);
  EXPECT_EQ(inventory.driver_version(), "550.54.15");
  ASSERT_EQ(inventory.devices_size(), 2);
  EXPECT_EQ(inventory.devices(1).model(), "NVIDIA H200");
  EXPECT_EQ(inventory.versions().at("os"), "Debian GNU/Linux 12 (bookworm)");
  EXPECT_EQ(inventory.versions().at("nccl"), "2.21.5");
  EXPECT_EQ(inventory.versions().at("mpi"), "Open MPI v4.1.4");
  EXPECT_FALSE(inventory.versions().at("kernel").empty());
  EXPECT_TRUE(CheckInventory(inventory).ok());
}

TEST(Inventory, MissingFilesAndLibrariesLeaveTheirFieldsEmpty) {
  InventorySources sources;
  sources.cpuinfo = "/nonexistent/cpuinfo";
  sources.meminfo = "/nonexistent/meminfo";
  sources.os_release = "/nonexistent/os-release";
  sources.nccl_library = "/nonexistent/libnccl.so.2";
  sources.mpi_library = "/nonexistent/libmpi.so.40";
  v1::Inventory inventory = ReadInventory(sources, NvmlGpus());
  EXPECT_EQ(inventory.cpu_model(), "");
  EXPECT_EQ(inventory.memory_bytes(), 0);
  EXPECT_EQ(inventory.versions().count("os"), 0u);
  EXPECT_EQ(inventory.versions().count("nccl"), 0u);
  EXPECT_EQ(inventory.versions().count("mpi"), 0u);
}

}  // namespace
}  // namespace hpcai500::agent
