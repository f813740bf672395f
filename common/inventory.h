// The bounds of a node inventory (v1::Inventory: CPU, memory, devices,
// driver, software versions), in one place for both sides: the agent cuts
// what it found to them (FitInventory) and the coordinator refuses an
// inventory beyond them (CheckInventory), as nothing a remote side sends is
// trusted.
//
// Thread-safe: free functions.
#ifndef HPCAI500_COMMON_INVENTORY_H_
#define HPCAI500_COMMON_INVENTORY_H_

#include <cstddef>

#include "absl/status/status.h"
#include "proto/hpcai500.pb.h"

namespace hpcai500 {

inline constexpr int kMaxInventoryDevices = 64;
inline constexpr int kMaxInventoryVersions = 32;
// Active NVLink links of one device (NVML knows of at most 18 today).
inline constexpr int kMaxInventoryNvLinks = 64;
// Every text of an inventory: CPU model, driver, device kind and model,
// version names and values.
inline constexpr size_t kMaxInventoryTextBytes = 256;

// Cuts *inventory to the bounds: texts to kMaxInventoryTextBytes (on a UTF-8
// character boundary) with control characters made spaces, devices after
// the first kMaxInventoryDevices, versions without a name or beyond
// kMaxInventoryVersions (the last by name), negative numbers (made 0) and
// NVLink counts over kMaxInventoryNvLinks (made that).
void FitInventory(v1::Inventory* inventory);

// OK when `inventory` is within the bounds; otherwise InvalidArgument that
// names the field, e.g. "inventory: 65 devices; at most 64", "inventory:
// device 3 model is 300 bytes; at most 256". Texts with control characters
// (a terminal's escapes), negative counts, sizes and device indexes, and
// NVLink counts over kMaxInventoryNvLinks are refused too.
absl::Status CheckInventory(const v1::Inventory& inventory);

}  // namespace hpcai500

#endif  // HPCAI500_COMMON_INVENTORY_H_
