// A node inventory for the tests of what reads, checks and shows one.
#ifndef HPCAI500_TESTS_COMMON_TEST_INVENTORY_H_
#define HPCAI500_TESTS_COMMON_TEST_INVENTORY_H_

#include <cstdint>

#include "proto/hpcai500.pb.h"

namespace hpcai500::testing {

// Two NVIDIA H200 of 141 GiB under driver 550.54.15, an AMD EPYC with 192
// cores and 1.5 TiB, hpcai500 0.1.0 and NCCL 2.21.5.
inline v1::Inventory TwoH200Inventory() {
  v1::Inventory inventory;
  inventory.set_cpu_model("AMD EPYC 9654 96-Core Processor");
  inventory.set_cpu_cores(192);
  inventory.set_memory_bytes(int64_t{3} << 39);
  inventory.set_driver_version("550.54.15");
  for (int i = 0; i < 2; ++i) {
    v1::Device* device = inventory.add_devices();
    device->set_index(i);
    device->set_kind("cuda");
    device->set_model("NVIDIA H200");
    device->set_memory_bytes(int64_t{141} << 30);
  }
  (*inventory.mutable_versions())["hpcai500"] = "0.1.0";
  (*inventory.mutable_versions())["nccl"] = "2.21.5";
  return inventory;
}

}  // namespace hpcai500::testing

#endif  // HPCAI500_TESTS_COMMON_TEST_INVENTORY_H_
