#include "common/checkpoint_manifest.h"

#include <openssl/evp.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>

#include "common/worker_args.h"

namespace hpcai500 {

namespace {

constexpr char kHeader[] = "hpcai500 checkpoint manifest 1";
constexpr char kManifestSuffix[] = ".manifest";

std::string Hex(const unsigned char* bytes, unsigned size) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned i = 0; i < size; ++i) {
    out += kDigits[bytes[i] >> 4];
    out += kDigits[bytes[i] & 15];
  }
  return out;
}

bool IsSha256Hex(std::string_view s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

// A decimal in [1, 2^62]; false for anything else.
bool ParsePositive(std::string_view text, int64_t* out) {
  if (text.empty() || text.size() > 19) return false;
  int64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    value = value * 10 + (c - '0');
  }
  if (value < 1 || value > (int64_t{1} << 62)) return false;
  *out = value;
  return true;
}

using DigestContext = std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)>;

DigestContext NewSha256() {
  DigestContext context(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  if (context != nullptr &&
      EVP_DigestInit_ex(context.get(), EVP_sha256(), nullptr) != 1) {
    context.reset();
  }
  return context;
}

std::string Finish(EVP_MD_CTX* context) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned size = 0;
  EVP_DigestFinal_ex(context, digest, &size);
  return Hex(digest, size);
}

}  // namespace

std::string CheckpointManifestFileName(int64_t epoch) {
  std::string name = CheckpointFileName(epoch);
  return name.substr(0, name.rfind('.')) + kManifestSuffix;
}

int64_t EpochOfManifestName(std::string_view name) {
  constexpr std::string_view kPrefix = "checkpoint-epoch-";
  constexpr std::string_view kSuffix = kManifestSuffix;
  if (name.size() <= kPrefix.size() + kSuffix.size() ||
      name.substr(0, kPrefix.size()) != kPrefix ||
      name.substr(name.size() - kSuffix.size()) != kSuffix) {
    return -1;
  }
  const std::string_view digits = name.substr(
      kPrefix.size(), name.size() - kPrefix.size() - kSuffix.size());
  if (digits.size() < 6 || digits.size() > 18) return -1;
  int64_t epoch = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return -1;
    epoch = epoch * 10 + (c - '0');
  }
  return epoch;
}

std::string FormatCheckpointManifest(const CheckpointManifest& manifest) {
  std::string out = std::string(kHeader) + "\n";
  out += "run_id " + std::to_string(manifest.run_id) + "\n";
  out += "attempt " + std::to_string(manifest.attempt) + "\n";
  out += "epoch " + std::to_string(manifest.epoch) + "\n";
  for (const CheckpointManifest::File& file : manifest.files) {
    out += "file " + file.sha256 + " " + file.name + "\n";
  }
  for (const std::string& line : manifest.events) out += "event " + line + "\n";
  return out;
}

bool ParseCheckpointManifest(std::string_view text, CheckpointManifest* out,
                             std::string* error) {
  if (text.size() > kMaxManifestBytes) {
    *error =
        "the manifest is over " + std::to_string(kMaxManifestBytes) + " bytes";
    return false;
  }
  CheckpointManifest m;
  size_t number = 0;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    if (end == std::string_view::npos) {
      *error = "the manifest's last line is not ended (a torn write?)";
      return false;
    }
    const std::string_view line = text.substr(0, end);
    text.remove_prefix(end + 1);
    const std::string where = "manifest line " + std::to_string(++number);
    if (number == 1) {
      if (line != kHeader) {
        *error = where + ": not \"" + kHeader + "\"";
        return false;
      }
      continue;
    }
    const size_t space = line.find(' ');
    const std::string_view word = line.substr(0, space);
    const std::string_view rest =
        space == std::string_view::npos ? "" : line.substr(space + 1);
    bool ok = true;
    if (word == "run_id") {
      ok = ParsePositive(rest, &m.run_id);
    } else if (word == "attempt") {
      ok = ParsePositive(rest, &m.attempt);
    } else if (word == "epoch") {
      ok = ParsePositive(rest, &m.epoch);
    } else if (word == "file") {
      const size_t gap = rest.find(' ');
      CheckpointManifest::File file;
      file.sha256 = std::string(rest.substr(0, gap));
      file.name = gap == std::string_view::npos
                      ? ""
                      : std::string(rest.substr(gap + 1));
      ok = IsSha256Hex(file.sha256) && !file.name.empty() &&
           file.name.find('/') == std::string::npos && file.name != "." &&
           file.name != "..";
      m.files.push_back(std::move(file));
    } else if (word == "event") {
      ok = !rest.empty();
      m.events.emplace_back(rest);
    } else {
      ok = false;
    }
    if (!ok) {
      *error = where + ": bad \"" + std::string(word) + "\" line";
      return false;
    }
  }
  if (number == 0) {
    *error = "the manifest is empty";
    return false;
  }
  if (m.run_id == 0 || m.attempt == 0 || m.epoch == 0 || m.files.empty()) {
    *error = "the manifest lacks its run_id, attempt, epoch or files";
    return false;
  }
  *out = std::move(m);
  return true;
}

bool Sha256OfFile(const std::string& path, std::string* hex,
                  std::string* error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *error = "cannot read " + path + ": " + std::strerror(errno);
    return false;
  }
  DigestContext context = NewSha256();
  if (context == nullptr) {
    *error = "SHA-256 is not available";
    return false;
  }
  char buffer[1 << 16];
  while (in) {
    in.read(buffer, sizeof(buffer));
    EVP_DigestUpdate(context.get(), buffer, static_cast<size_t>(in.gcount()));
  }
  if (in.bad()) {
    *error = "reading " + path + " failed";
    return false;
  }
  *hex = Finish(context.get());
  return true;
}

std::string CheckpointDigest(
    const std::vector<CheckpointManifest::File>& files) {
  DigestContext context = NewSha256();
  if (context == nullptr) return "";
  for (const CheckpointManifest::File& file : files) {
    const std::string line = file.sha256 + " " + file.name + "\n";
    EVP_DigestUpdate(context.get(), line.data(), line.size());
  }
  return Finish(context.get());
}

}  // namespace hpcai500
