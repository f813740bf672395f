// Result bundles: their layout, manifest and seal. See bundle.h.
#include "methodology/bundle.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/json.h"
#include "common/status_macros.h"
#include "google/protobuf/util/json_util.h"
#include "nlohmann/json.hpp"

namespace hpcai500 {
namespace {

using nlohmann::json;

constexpr char kReferencesPath[] = "references.json";
constexpr char kSubmissionPath[] = "submission.json";

std::string RunDir(int64_t run_id) { return absl::StrCat("runs/", run_id); }

// `message` from JSON, every field known; InvalidArgument naming `path`.
absl::Status ParseProtoFile(absl::string_view path, absl::string_view text,
                            google::protobuf::Message* message) {
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  auto status = google::protobuf::util::JsonStringToMessage(std::string(text),
                                                            message, options);
  if (!status.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": ", status.message().as_string()));
  }
  return absl::OkStatus();
}

absl::StatusOr<json> ParseJsonFile(absl::string_view path,
                                   absl::string_view text) {
  json parsed = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not JSON"));
  }
  return parsed;
}

json ReferencesJson(const std::vector<ReferenceConvergence>& references) {
  json list = json::array();
  for (const ReferenceConvergence& r : references) {
    list.push_back({{"workload", r.workload},
                    {"config", r.config},
                    {"global_batch", r.global_batch},
                    {"epochs", r.epochs},
                    {"made_by", r.made_by}});
  }
  return list;
}

absl::StatusOr<std::vector<ReferenceConvergence>> ParseReferences(
    absl::string_view text) {
  ASSIGN_OR_RETURN(const json list, ParseJsonFile(kReferencesPath, text));
  std::vector<ReferenceConvergence> references;
  if (!list.is_array()) {
    return absl::InvalidArgumentError(
        absl::StrCat(kReferencesPath, ": not a list"));
  }
  for (const json& item : list) {
    ReferenceConvergence r;
    if (!item.is_object() || !item.value("workload", json()).is_string() ||
        !item.value("config", json()).is_string() ||
        !item.value("global_batch", json()).is_number_integer() ||
        !item.value("epochs", json()).is_array() ||
        !item.value("made_by", json()).is_string()) {
      return absl::InvalidArgumentError(
          absl::StrCat(kReferencesPath,
                       ": an entry lacks workload, config, global_batch, "
                       "epochs or made_by"));
    }
    r.workload = item["workload"];
    r.config = item["config"];
    r.global_batch = item["global_batch"];
    r.made_by = item["made_by"];
    for (const json& epochs : item["epochs"]) {
      if (!epochs.is_number()) {
        return absl::InvalidArgumentError(
            absl::StrCat(kReferencesPath, ": epochs must be numbers"));
      }
      r.epochs.push_back(epochs.get<double>());
    }
    references.push_back(std::move(r));
  }
  return references;
}

// {"<attempt>": {"<node>": Inventory}} of `run`.
absl::StatusOr<std::string> InventoryJson(const v1::Run& run) {
  json all = json::object();
  for (const v1::Attempt& attempt : run.attempts()) {
    json nodes = json::object();
    for (const auto& [node, inventory] : attempt.inventory()) {
      ASSIGN_OR_RETURN(const std::string text,
                       ProtoToJson(inventory, /*indent=*/false));
      nodes[node] = json::parse(text);
    }
    all[absl::StrCat(attempt.number())] = std::move(nodes);
  }
  return all.dump(2);
}

absl::Status ParseInventory(absl::string_view path, absl::string_view text,
                            v1::Run& run) {
  ASSIGN_OR_RETURN(const json all, ParseJsonFile(path, text));
  if (!all.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not an object"));
  }
  for (const auto& [number, nodes] : all.items()) {
    v1::Attempt* attempt = nullptr;
    for (v1::Attempt& a : *run.mutable_attempts()) {
      if (absl::StrCat(a.number()) == number) attempt = &a;
    }
    if (attempt == nullptr || !nodes.is_object()) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": attempt '", number, "' is not the run's"));
    }
    for (const auto& [node, inventory] : nodes.items()) {
      v1::Inventory parsed;
      RETURN_IF_ERROR(ParseProtoFile(path, inventory.dump(), &parsed));
      (*attempt->mutable_inventory())[node] = std::move(parsed);
    }
  }
  return absl::OkStatus();
}

// (attempt, rank) of "attempt-<n>/rank-<r>.mllog".
std::optional<std::pair<int32_t, int32_t>> MllogKey(absl::string_view rest) {
  std::vector<absl::string_view> parts = absl::StrSplit(rest, '/');
  int32_t attempt = 0, rank = 0;
  if (parts.size() != 2 || !absl::ConsumePrefix(&parts[0], "attempt-") ||
      !absl::ConsumePrefix(&parts[1], "rank-") ||
      !absl::ConsumeSuffix(&parts[1], ".mllog") ||
      !absl::SimpleAtoi(parts[0], &attempt) ||
      !absl::SimpleAtoi(parts[1], &rank) || attempt < 1 || rank < 0) {
    return std::nullopt;
  }
  return std::make_pair(attempt, rank);
}

// The files of run directory `dir` (their paths below it) into a run.
absl::StatusOr<BundledRun> ParseRun(
    const std::string& dir, const std::map<std::string, std::string>& files) {
  auto file = [&](const std::string& name) -> const std::string* {
    auto it = files.find(name);
    return it == files.end() ? nullptr : &it->second;
  };
  BundledRun bundled;
  for (const char* name : {"run.json", "inventory.json", "score.json"}) {
    if (file(name) == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat(dir, "/", name, ": missing"));
    }
  }
  RETURN_IF_ERROR(ParseProtoFile(absl::StrCat(dir, "/run.json"),
                                 *file("run.json"), &bundled.run));
  if (RunDir(bundled.run.id()) != dir) {
    return absl::InvalidArgumentError(absl::StrCat(
        dir, "/run.json: holds run ", bundled.run.id(), ", not its folder's"));
  }
  RETURN_IF_ERROR(ParseInventory(absl::StrCat(dir, "/inventory.json"),
                                 *file("inventory.json"), bundled.run));
  RETURN_IF_ERROR(ParseProtoFile(absl::StrCat(dir, "/score.json"),
                                 *file("score.json"),
                                 bundled.run.mutable_score()));
  for (const auto& [name, data] : files) {
    if (name == "run.json" || name == "inventory.json" ||
        name == "score.json") {
      continue;
    }
    std::optional<std::pair<int32_t, int32_t>> key = MllogKey(name);
    if (!key.has_value()) {
      return absl::InvalidArgumentError(
          absl::StrCat(dir, "/", name, ": not a file a bundle holds"));
    }
    bundled.mllog[*key] = data;
  }
  return bundled;
}

absl::StatusOr<BundleManifest> ParseManifest(absl::string_view text) {
  const json parsed = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded() || !parsed.is_object()) {
    return absl::InvalidArgumentError("manifest: not a JSON object");
  }
  BundleManifest manifest;
  const json& format = parsed.value("format", json());
  if (!format.is_string() || format != kBundleFormat) {
    return absl::InvalidArgumentError(absl::StrCat("manifest: format is not ",
                                                   kBundleFormat, " (got ",
                                                   format.dump(), ")"));
  }
  manifest.format = format;
  const json& subject = parsed.value("subject", json());
  const json& site_key = parsed.value("site_key", json());
  const json& created = parsed.value("created_ms", json());
  const json& files = parsed.value("files", json());
  if (!subject.is_string() || !site_key.is_string() ||
      !created.is_number_integer() || !files.is_array()) {
    return absl::InvalidArgumentError(
        "manifest: subject, site_key, created_ms or files missing or "
        "mistyped");
  }
  manifest.subject = subject;
  manifest.site_key = site_key;
  manifest.created_ms = created;
  for (const json& item : files) {
    BundleManifest::File file;
    if (!item.is_object() || !item.value("path", json()).is_string() ||
        !item.value("bytes", json()).is_number_integer() ||
        !item.value("sha256", json()).is_string()) {
      return absl::InvalidArgumentError(
          "manifest: a file entry lacks path, bytes or sha256");
    }
    file.path = item["path"];
    file.bytes = item["bytes"];
    file.sha256 = item["sha256"];
    if (!IsSafeArchivePath(file.path) || !IsLowerHex(file.sha256, 64)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "manifest: a malformed entry for '", absl::CEscape(file.path), "'"));
    }
    manifest.files.push_back(std::move(file));
  }
  return manifest;
}

}  // namespace

absl::StatusOr<std::vector<ArchiveEntry>> BundleFiles(
    const BundleContents& contents) {
  std::vector<ArchiveEntry> files;
  files.push_back(
      {kReferencesPath, ReferencesJson(contents.references).dump(2)});
  if (contents.submission.has_value()) {
    ASSIGN_OR_RETURN(std::string row,
                     ProtoToJson(*contents.submission, /*indent=*/true));
    files.push_back({kSubmissionPath, std::move(row)});
  }
  for (const BundledRun& bundled : contents.runs) {
    const std::string dir = RunDir(bundled.run.id());
    v1::Run bare = bundled.run;
    bare.clear_score();
    for (v1::Attempt& attempt : *bare.mutable_attempts()) {
      attempt.clear_inventory();
    }
    ASSIGN_OR_RETURN(std::string run, ProtoToJson(bare, /*indent=*/true));
    ASSIGN_OR_RETURN(std::string inventory, InventoryJson(bundled.run));
    ASSIGN_OR_RETURN(std::string score,
                     ProtoToJson(bundled.run.score(), /*indent=*/true));
    files.push_back({dir + "/run.json", std::move(run)});
    files.push_back({dir + "/inventory.json", std::move(inventory)});
    files.push_back({dir + "/score.json", std::move(score)});
    for (const auto& [key, lines] : bundled.mllog) {
      files.push_back({absl::StrCat(dir, "/attempt-", key.first, "/rank-",
                                    key.second, ".mllog"),
                       lines});
    }
  }
  return files;
}

absl::StatusOr<std::string> SealBundle(const std::vector<ArchiveEntry>& files,
                                       const SiteKey& key,
                                       absl::string_view subject,
                                       int64_t created_ms) {
  json listed = json::array();
  for (const ArchiveEntry& file : files) {
    listed.push_back({{"path", file.path},
                      {"bytes", file.data.size()},
                      {"sha256", Sha256Hex(file.data)}});
  }
  const json manifest = {{"format", kBundleFormat},
                         {"subject", std::string(subject)},
                         {"site_key", key.PublicKeyHex()},
                         {"created_ms", created_ms},
                         {"files", listed}};
  std::string manifest_text = manifest.dump(2) + "\n";
  ASSIGN_OR_RETURN(std::string signature, key.Sign(manifest_text));
  std::vector<ArchiveEntry> entries;
  entries.push_back({kBundleManifestPath, std::move(manifest_text)});
  entries.push_back({kBundleSignaturePath, signature + "\n"});
  entries.insert(entries.end(), files.begin(), files.end());
  return WriteArchive(entries);
}

absl::StatusOr<OpenedBundle> OpenBundle(absl::string_view bytes,
                                        const ArchiveLimits& limits) {
  ASSIGN_OR_RETURN(std::vector<ArchiveEntry> entries,
                   ReadArchive(bytes, limits));
  OpenedBundle opened;
  bool has_manifest = false;
  for (ArchiveEntry& entry : entries) {
    if (entry.path == kBundleManifestPath) {
      opened.manifest_text = std::move(entry.data);
      has_manifest = true;
    } else if (entry.path == kBundleSignaturePath) {
      opened.signature = std::string(absl::StripAsciiWhitespace(entry.data));
    } else {
      opened.files[entry.path] = std::move(entry.data);
    }
  }
  if (!has_manifest) {
    return absl::InvalidArgumentError(
        absl::StrCat("manifest: no ", kBundleManifestPath, " in the archive"));
  }
  ASSIGN_OR_RETURN(opened.manifest, ParseManifest(opened.manifest_text));
  return opened;
}

absl::StatusOr<BundleContents> ParseBundleFiles(
    const std::map<std::string, std::string>& files) {
  BundleContents contents;
  std::map<std::string, std::map<std::string, std::string>> run_files;
  for (const auto& [path, data] : files) {
    if (path == kReferencesPath) {
      ASSIGN_OR_RETURN(contents.references, ParseReferences(data));
      continue;
    }
    if (path == kSubmissionPath) {
      v1::LeaderboardRow row;
      RETURN_IF_ERROR(ParseProtoFile(path, data, &row));
      contents.submission = std::move(row);
      continue;
    }
    std::vector<absl::string_view> parts =
        absl::StrSplit(path, absl::MaxSplits('/', 2));
    int64_t id = 0;
    if (parts.size() != 3 || parts[0] != "runs" ||
        !absl::SimpleAtoi(parts[1], &id) || id <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": not a file a bundle holds"));
    }
    run_files[RunDir(id)][std::string(parts[2])] = data;
  }
  if (files.find(kReferencesPath) == files.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat(kReferencesPath, ": missing"));
  }
  if (run_files.empty()) {
    return absl::InvalidArgumentError("runs/: the bundle holds no run");
  }
  for (const auto& [dir, its_files] : run_files) {
    ASSIGN_OR_RETURN(BundledRun bundled, ParseRun(dir, its_files));
    contents.runs.push_back(std::move(bundled));
  }
  std::sort(contents.runs.begin(), contents.runs.end(),
            [](const BundledRun& a, const BundledRun& b) {
              return a.run.id() < b.run.id();
            });
  return contents;
}

}  // namespace hpcai500
