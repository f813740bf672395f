#include "common/inventory.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/printable.h"
#include "common/status_macros.h"

namespace hpcai500 {
namespace {

// `text` cut to kMaxInventoryTextBytes without splitting a UTF-8 character,
// control characters made spaces.
std::string FitText(std::string text) {
  if (text.size() > kMaxInventoryTextBytes) {
    size_t end = kMaxInventoryTextBytes;
    // Back off continuation bytes (10xxxxxx) to the start of a character.
    while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) {
      --end;
    }
    text.resize(end);
  }
  std::replace_if(text.begin(), text.end(), IsControlCharacter, ' ');
  return text;
}

absl::Status CheckText(absl::string_view what, absl::string_view text) {
  if (text.size() > kMaxInventoryTextBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("inventory: ", what, " is ", text.size(),
                     " bytes; at most ", kMaxInventoryTextBytes));
  }
  if (std::any_of(text.begin(), text.end(), IsControlCharacter)) {
    return absl::InvalidArgumentError(
        absl::StrCat("inventory: ", what, " holds a control character"));
  }
  return absl::OkStatus();
}

absl::Status CheckNotNegative(absl::string_view what, int64_t value) {
  if (value >= 0) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("inventory: ", what, " must not be negative, got ", value));
}

}  // namespace

void FitInventory(v1::Inventory* inventory) {
  inventory->set_cpu_model(FitText(inventory->cpu_model()));
  inventory->set_cpu_cores(std::max(0, inventory->cpu_cores()));
  inventory->set_memory_bytes(std::max<int64_t>(0, inventory->memory_bytes()));
  inventory->set_driver_version(FitText(inventory->driver_version()));
  auto* devices = inventory->mutable_devices();
  if (devices->size() > kMaxInventoryDevices) {
    devices->DeleteSubrange(kMaxInventoryDevices,
                            devices->size() - kMaxInventoryDevices);
  }
  for (v1::Device& device : *devices) {
    device.set_index(std::max(0, device.index()));
    device.set_kind(FitText(device.kind()));
    device.set_model(FitText(device.model()));
    device.set_memory_bytes(std::max<int64_t>(0, device.memory_bytes()));
    device.set_nvlink_links(
        std::clamp(device.nvlink_links(), 0, kMaxInventoryNvLinks));
  }
  std::vector<std::pair<std::string, std::string>> versions;
  for (const auto& [name, value] : inventory->versions()) {
    if (!name.empty()) versions.emplace_back(FitText(name), FitText(value));
  }
  std::sort(versions.begin(), versions.end());
  if (versions.size() > static_cast<size_t>(kMaxInventoryVersions)) {
    versions.resize(kMaxInventoryVersions);
  }
  inventory->clear_versions();
  inventory->mutable_versions()->insert(versions.begin(), versions.end());
}

absl::Status CheckInventory(const v1::Inventory& inventory) {
  RETURN_IF_ERROR(CheckText("cpu_model", inventory.cpu_model()));
  RETURN_IF_ERROR(CheckNotNegative("cpu_cores", inventory.cpu_cores()));
  RETURN_IF_ERROR(CheckNotNegative("memory_bytes", inventory.memory_bytes()));
  RETURN_IF_ERROR(CheckText("driver_version", inventory.driver_version()));
  if (inventory.devices_size() > kMaxInventoryDevices) {
    return absl::InvalidArgumentError(
        absl::StrCat("inventory: ", inventory.devices_size(),
                     " devices; at most ", kMaxInventoryDevices));
  }
  for (int i = 0; i < inventory.devices_size(); ++i) {
    const v1::Device& device = inventory.devices(i);
    const std::string what = absl::StrCat("device ", i);
    RETURN_IF_ERROR(
        CheckNotNegative(absl::StrCat(what, " index"), device.index()));
    RETURN_IF_ERROR(CheckText(absl::StrCat(what, " kind"), device.kind()));
    RETURN_IF_ERROR(CheckText(absl::StrCat(what, " model"), device.model()));
    RETURN_IF_ERROR(CheckNotNegative(absl::StrCat(what, " memory_bytes"),
                                     device.memory_bytes()));
    RETURN_IF_ERROR(CheckNotNegative(absl::StrCat(what, " nvlink_links"),
                                     device.nvlink_links()));
    if (device.nvlink_links() > kMaxInventoryNvLinks) {
      return absl::InvalidArgumentError(
          absl::StrCat("inventory: ", what, " has ", device.nvlink_links(),
                       " NVLink links; at most ", kMaxInventoryNvLinks));
    }
  }
  if (inventory.versions_size() > kMaxInventoryVersions) {
    return absl::InvalidArgumentError(
        absl::StrCat("inventory: ", inventory.versions_size(),
                     " versions; at most ", kMaxInventoryVersions));
  }
  for (const auto& [name, value] : inventory.versions()) {
    RETURN_IF_ERROR(CheckText("a version name", name));
    if (name.empty()) {
      return absl::InvalidArgumentError("inventory: a version has no name");
    }
    RETURN_IF_ERROR(
        CheckText(absl::StrCat("version '", name.substr(0, 40), "'"), value));
  }
  return absl::OkStatus();
}

}  // namespace hpcai500
