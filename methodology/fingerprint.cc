// A run's fingerprint and the attribution of a change: see fingerprint.h.
#include "methodology/fingerprint.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/text_format.h"

namespace hpcai500 {
namespace {

using google::protobuf::FieldDescriptor;

// Spec fields that differ between runs of one series by design.
bool LeftOutOfFingerprint(absl::string_view field) {
  return field == "seed" || field == "sweep";
}

// "x" or, for a repeated field, its values joined by ",".
std::string SpecFieldText(const v1::RunSpec& spec,
                          const FieldDescriptor* field) {
  const google::protobuf::Reflection* reflection = spec.GetReflection();
  auto one = [&](int index) {
    if (field->cpp_type() == FieldDescriptor::CPPTYPE_STRING) {
      return index < 0 ? reflection->GetString(spec, field)
                       : reflection->GetRepeatedString(spec, field, index);
    }
    std::string text;
    google::protobuf::TextFormat::PrintFieldValueToString(spec, field, index,
                                                          &text);
    return text;
  };
  if (!field->is_repeated()) return one(-1);
  std::vector<std::string> values;
  for (int i = 0; i < reflection->FieldSize(spec, field); ++i) {
    values.push_back(one(i));
  }
  std::sort(values.begin(), values.end());
  return absl::StrJoin(values, ",");
}

// Each node's value of one field, as the fingerprint holds it: the one
// value, or the distinct values sorted and joined by " | ".
class FieldValues {
 public:
  void Add(const std::string& field, const std::string& value) {
    values_[field].insert(value);
  }
  void Into(v1::Fingerprint& fingerprint) const {
    for (const auto& [field, values] : values_) {
      (*fingerprint.mutable_fields())[field] = absl::StrJoin(values, " | ");
    }
  }

 private:
  std::map<std::string, std::set<std::string>> values_;
};

std::string DeviceModels(const v1::Inventory& inventory) {
  std::map<std::string, int> counts;
  for (const v1::Device& device : inventory.devices()) ++counts[device.model()];
  if (counts.empty()) return "none";
  std::vector<std::string> parts;
  for (const auto& [model, count] : counts) {
    parts.push_back(absl::StrCat(model, " x", count));
  }
  return absl::StrJoin(parts, ", ");
}

std::string Interconnect(const v1::Inventory& inventory) {
  int links = 0;
  for (const v1::Device& device : inventory.devices()) {
    links = std::max(links, device.nvlink_links());
  }
  return links > 0 ? absl::StrCat("nvlink ", links, " links") : "none";
}

// The most common value of `field` among `fingerprints` ("" for absent)
// and the share of them holding it; ties go to the smaller value.
std::pair<std::string, double> MostCommon(
    const std::vector<v1::Fingerprint>& fingerprints,
    const std::string& field) {
  std::map<std::string, int> counts;
  for (const v1::Fingerprint& fingerprint : fingerprints) {
    auto it = fingerprint.fields().find(field);
    ++counts[it == fingerprint.fields().end() ? "" : it->second];
  }
  std::pair<std::string, int> best{"", -1};
  for (const auto& [value, count] : counts) {
    if (count > best.second) best = {value, count};
  }
  return {best.first, fingerprints.empty() ? 0.0
                                           : static_cast<double>(best.second) /
                                                 fingerprints.size()};
}

std::string Shown(const std::string& value) {
  return value.empty() ? "(none)" : value;
}

}  // namespace

v1::Fingerprint MakeFingerprint(const v1::RunSpec& spec,
                                const std::vector<FingerprintNode>& nodes,
                                absl::string_view coordinator_version) {
  v1::Fingerprint fingerprint;
  auto& fields = *fingerprint.mutable_fields();
  fields["coordinator"] = std::string(coordinator_version);
  std::vector<std::string> names;
  FieldValues values;
  for (const FingerprintNode& node : nodes) {
    names.push_back(node.name);
    const v1::Inventory& inventory = node.inventory;
    values.Add("cpu", inventory.cpu_model());
    values.Add("gpu", DeviceModels(inventory));
    values.Add("driver", inventory.driver_version());
    values.Add("interconnect", Interconnect(inventory));
    for (const auto& [key, version] : inventory.versions()) {
      values.Add(key, version);
    }
    for (const auto& [key, label] : node.labels) {
      values.Add(absl::StrCat("label.", key), label);
    }
  }
  values.Into(fingerprint);
  std::sort(names.begin(), names.end());
  fields[kFingerprintNodesField] = absl::StrJoin(names, ",");
  std::vector<const FieldDescriptor*> set;
  spec.GetReflection()->ListFields(spec, &set);
  for (const FieldDescriptor* field : set) {
    if (LeftOutOfFingerprint(field->name())) continue;
    fields[absl::StrCat("spec.", field->name())] = SpecFieldText(spec, field);
  }
  return fingerprint;
}

std::vector<FieldShift> AttributeChange(
    const std::vector<v1::Fingerprint>& before,
    const std::vector<v1::Fingerprint>& after) {
  std::set<std::string> fields;
  for (const auto* side : {&before, &after}) {
    for (const v1::Fingerprint& fingerprint : *side) {
      for (const auto& [field, value] : fingerprint.fields()) {
        fields.insert(field);
      }
    }
  }
  std::vector<FieldShift> shifts;
  for (const std::string& field : fields) {
    auto [old_value, old_share] = MostCommon(before, field);
    auto [new_value, new_share] = MostCommon(after, field);
    if (old_value == new_value) continue;
    shifts.push_back({field, std::move(old_value), std::move(new_value),
                      old_share, new_share});
  }
  std::stable_sort(shifts.begin(), shifts.end(),
                   [](const FieldShift& a, const FieldShift& b) {
                     return a.before_share * a.after_share >
                            b.before_share * b.after_share;
                   });
  return shifts;
}

std::string AttributionText(const std::vector<FieldShift>& shifts,
                            bool compared, int max_shifts) {
  if (!compared) return "no fingerprints to compare";
  std::vector<std::string> parts;
  bool nodes_shifted = false;
  for (const FieldShift& shift : shifts) {
    nodes_shifted |= shift.field == kFingerprintNodesField;
    if (static_cast<int>(parts.size()) >= max_shifts) continue;
    const std::string where =
        shift.after_share >= 1
            ? "in every run after"
            : absl::StrFormat(
                  "in %d%% of runs after",
                  static_cast<int>(std::lround(100 * shift.after_share)));
    parts.push_back(absl::StrCat(shift.field, " ", Shown(shift.before), " -> ",
                                 Shown(shift.after), " ", where));
  }
  if (parts.empty()) parts.push_back("no fingerprint field changed");
  if (!nodes_shifted) parts.push_back("node set unchanged");
  return absl::StrJoin(parts, "; ");
}

}  // namespace hpcai500
