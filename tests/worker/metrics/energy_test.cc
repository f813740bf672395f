#include "worker/metrics/energy.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

namespace hpcai500::worker {
namespace {

namespace fs = std::filesystem;

// A fake /sys/class/powercap in a temporary folder.
class RaplTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = std::string(::testing::TempDir()) + "/powercap_" +
            std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }

  void Write(const std::string& relative, const std::string& text) {
    const fs::path path = fs::path(root_) / relative;
    fs::create_directories(path.parent_path());
    std::ofstream(path) << text;
  }

  void AddZone(const std::string& zone, const std::string& name,
               uint64_t energy_uj, uint64_t max_uj) {
    Write(zone + "/name", name + "\n");
    Write(zone + "/energy_uj", std::to_string(energy_uj) + "\n");
    Write(zone + "/max_energy_range_uj", std::to_string(max_uj) + "\n");
  }

  void SetEnergy(const std::string& zone, uint64_t energy_uj) {
    Write(zone + "/energy_uj", std::to_string(energy_uj) + "\n");
  }

  std::string root_;
};

TEST_F(RaplTest, SumsPackageDomainsOnlySinceOpening) {
  AddZone("intel-rapl:0", "package-0", 1'000'000, 10'000'000);
  AddZone("intel-rapl:1", "package-1", 5'000'000, 10'000'000);
  AddZone("intel-rapl:0:0", "core", 0, 10'000'000);  // inside package 0
  AddZone("intel-rapl:2", "psys", 0, 10'000'000);    // overlaps packages
  std::string note;
  std::unique_ptr<EnergyReader> reader = OpenRaplReader(root_, &note);
  ASSERT_NE(reader, nullptr) << note;
  EXPECT_STREQ(reader->source(), "rapl");
  EXPECT_EQ(reader->Joules(), 0.0);

  SetEnergy("intel-rapl:0", 3'500'000);    // +2.5 J
  SetEnergy("intel-rapl:1", 6'000'000);    // +1 J
  SetEnergy("intel-rapl:0:0", 9'000'000);  // ignored
  SetEnergy("intel-rapl:2", 9'000'000);    // ignored
  EXPECT_DOUBLE_EQ(*reader->Joules(), 3.5);
}

TEST_F(RaplTest, UndoesACounterWraparound) {
  AddZone("intel-rapl:0", "package-0", 9'000'000, 10'000'000);
  std::string note;
  std::unique_ptr<EnergyReader> reader = OpenRaplReader(root_, &note);
  ASSERT_NE(reader, nullptr) << note;
  SetEnergy("intel-rapl:0", 500'000);  // 1 J to the top, then 0.5 J
  EXPECT_DOUBLE_EQ(*reader->Joules(), 1.5);
  SetEnergy("intel-rapl:0", 2'500'000);
  EXPECT_DOUBLE_EQ(*reader->Joules(), 3.5);
}

TEST_F(RaplTest, NoPowercapFolderIsAbsentWithoutANote) {
  std::string note = "stale";
  EXPECT_EQ(OpenRaplReader(root_ + "/missing", &note), nullptr);
  EXPECT_EQ(note, "");
}

TEST_F(RaplTest, NoPackageDomainIsAbsent) {
  AddZone("intel-rapl:0", "psys", 1, 10);
  std::string note;
  EXPECT_EQ(OpenRaplReader(root_, &note), nullptr);
  EXPECT_EQ(note, "");
}

TEST_F(RaplTest, MissingCounterFileIsAbsentWithANoteNamingIt) {
  AddZone("intel-rapl:0", "package-0", 1, 10);
  fs::remove(fs::path(root_) / "intel-rapl:0/energy_uj");
  std::string note;
  EXPECT_EQ(OpenRaplReader(root_, &note), nullptr);
  EXPECT_NE(note.find(root_ + "/intel-rapl:0/energy_uj"), std::string::npos)
      << note;
  EXPECT_NE(note.find("No such file"), std::string::npos) << note;
}

TEST_F(RaplTest, UnreadableCounterIsAbsentWithANoteNamingIt) {
  AddZone("intel-rapl:0", "package-0", 1, 10);
  // A folder where the counter should be fails to read even for root, the
  // way a root-only energy_uj fails for everyone else.
  fs::remove(fs::path(root_) / "intel-rapl:0/energy_uj");
  fs::create_directories(fs::path(root_) / "intel-rapl:0/energy_uj");
  std::string note;
  EXPECT_EQ(OpenRaplReader(root_, &note), nullptr);
  EXPECT_NE(note.find("cannot read " + root_ + "/intel-rapl:0/energy_uj"),
            std::string::npos)
      << note;
}

TEST_F(RaplTest, CounterThatVanishesLaterMakesTheEpochAbsent) {
  AddZone("intel-rapl:0", "package-0", 1'000'000, 10'000'000);
  std::string note;
  EpochEnergy energy(OpenRaplReader(root_, &note));
  ASSERT_STREQ(energy.source(), "rapl");
  energy.StartEpoch();
  SetEnergy("intel-rapl:0", 3'000'000);
  EXPECT_DOUBLE_EQ(*energy.StopEpoch(), 2.0);

  energy.StartEpoch();
  fs::remove(fs::path(root_) / "intel-rapl:0/energy_uj");
  EXPECT_EQ(energy.StopEpoch(), std::nullopt);
}

TEST_F(RaplTest, PollingFollowsSeveralWrapsInOneEpoch) {
  AddZone("intel-rapl:0", "package-0", 0, 10'000'000);
  std::string note;
  EpochEnergy energy(OpenRaplReader(root_, &note));
  energy.StartEpoch();
  // 8 J every poll: more than one wrap (10 J) between start and stop.
  SetEnergy("intel-rapl:0", 8'000'000);
  energy.Poll(/*now_seconds=*/100);
  SetEnergy("intel-rapl:0", 6'000'000);
  energy.Poll(/*now_seconds=*/101);  // too soon: not read
  energy.Poll(/*now_seconds=*/100 + EpochEnergy::kPollSeconds);
  SetEnergy("intel-rapl:0", 4'000'000);
  EXPECT_DOUBLE_EQ(*energy.StopEpoch(), 24.0);
}

TEST(EpochEnergy, NoReaderMeansNoFigure) {
  EpochEnergy energy(nullptr);
  EXPECT_EQ(energy.source(), nullptr);
  energy.StartEpoch();
  energy.Poll(1e9);
  EXPECT_EQ(energy.StopEpoch(), std::nullopt);
}

// A fake NVML: devices with energy counters in millijoules.
struct FakeNvml {
  int init_rc = 0;
  int energy_rc = 0;
  std::map<unsigned, unsigned long long> millijoules;
  int inits = 0;
  int shutdowns = 0;
  // Device handles are addresses of these slots.
  unsigned slots[8] = {0, 1, 2, 3, 4, 5, 6, 7};

  NvmlApi Api() {
    NvmlApi api;
    api.init = [this] {
      ++inits;
      return init_rc;
    };
    api.shutdown = [this] {
      ++shutdowns;
      return 0;
    };
    api.device_handle_by_index = [this](unsigned index,
                                        NvmlApi::Device* device) {
      if (millijoules.count(index) == 0) return 2;  // INVALID_ARGUMENT
      *device = &slots[index];
      return 0;
    };
    api.total_energy_consumption = [this](NvmlApi::Device device,
                                          unsigned long long* mj) {
      if (energy_rc != 0) return energy_rc;
      *mj = millijoules.at(*static_cast<unsigned*>(device));
      return 0;
    };
    return api;
  }
};

TEST(NvmlReader, ReadsTheRequestedDeviceInJoules) {
  FakeNvml nvml;
  nvml.millijoules = {{0, 1'000}, {1, 50'000}};
  std::string note;
  {
    std::unique_ptr<EnergyReader> reader =
        OpenNvmlReader(nvml.Api(), /*index=*/1, &note);
    ASSERT_NE(reader, nullptr) << note;
    EXPECT_STREQ(reader->source(), "nvml");
    EXPECT_DOUBLE_EQ(*reader->Joules(), 50.0);
    nvml.millijoules[1] = 62'500;
    nvml.millijoules[0] = 999'000;  // another rank's GPU
    EXPECT_DOUBLE_EQ(*reader->Joules(), 62.5);
    EXPECT_EQ(nvml.shutdowns, 0);
  }
  EXPECT_EQ(nvml.inits, 1);
  EXPECT_EQ(nvml.shutdowns, 1);
}

TEST(NvmlReader, EpochEnergyIsTheCounterDifference) {
  FakeNvml nvml;
  nvml.millijoules = {{0, 10'000}};
  std::string note;
  EpochEnergy energy(OpenNvmlReader(nvml.Api(), 0, &note));
  energy.StartEpoch();
  nvml.millijoules[0] = 310'000;
  EXPECT_DOUBLE_EQ(*energy.StopEpoch(), 300.0);
}

TEST(NvmlReader, InitFailureIsAbsentWithANote) {
  FakeNvml nvml;
  nvml.init_rc = 9;  // NVML_ERROR_DRIVER_NOT_LOADED
  nvml.millijoules = {{0, 1}};
  std::string note;
  EXPECT_EQ(OpenNvmlReader(nvml.Api(), 0, &note), nullptr);
  EXPECT_NE(note.find("nvmlInit_v2 returned 9"), std::string::npos) << note;
  EXPECT_EQ(nvml.shutdowns, 0);  // never initialised
}

TEST(NvmlReader, MissingDeviceOrUnsupportedCounterIsAbsentAndShutsDown) {
  FakeNvml nvml;
  nvml.millijoules = {{0, 1}};
  std::string note;
  EXPECT_EQ(OpenNvmlReader(nvml.Api(), /*index=*/3, &note), nullptr);
  EXPECT_NE(note.find("device 3"), std::string::npos) << note;
  EXPECT_EQ(nvml.shutdowns, 1);

  nvml.energy_rc = 3;  // NVML_ERROR_NOT_SUPPORTED (GPUs before Volta)
  EXPECT_EQ(OpenNvmlReader(nvml.Api(), 0, &note), nullptr);
  EXPECT_NE(note.find("not supported"), std::string::npos) << note;
  EXPECT_EQ(nvml.shutdowns, 2);
}

TEST(NvmlReader, LaterReadFailureMakesTheEpochAbsent) {
  FakeNvml nvml;
  nvml.millijoules = {{0, 1'000}};
  std::string note;
  EpochEnergy energy(OpenNvmlReader(nvml.Api(), 0, &note));
  energy.StartEpoch();
  nvml.energy_rc = 15;  // NVML_ERROR_GPU_IS_LOST
  EXPECT_EQ(energy.StopEpoch(), std::nullopt);
}

TEST(LoadNvml, MissingLibraryIsAnErrorNamingIt) {
  std::string error;
  EXPECT_EQ(LoadNvml("libhpcai500-no-such-nvml.so.1", &error), std::nullopt);
  EXPECT_NE(error.find("cannot load libhpcai500-no-such-nvml.so.1"),
            std::string::npos)
      << error;
}

TEST(LoadNvml, LibraryWithoutTheSymbolsIsAnErrorNamingTheFirstMissing) {
  std::string error;
  // zlib is loaded by this test binary and has no NVML in it.
  EXPECT_EQ(LoadNvml("libz.so.1", &error), std::nullopt);
  EXPECT_NE(error.find("libz.so.1 has no nvml"), std::string::npos) << error;
}

}  // namespace
}  // namespace hpcai500::worker
