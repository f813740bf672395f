// gzip-compressed ustar archives of plain files: see bundle_archive.h.
#include "methodology/bundle_archive.h"

#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

namespace hpcai500 {
namespace {

constexpr size_t kBlock = 512;
// ustar header fields: offset and length.
constexpr size_t kNameAt = 0, kNameLen = 100;
constexpr size_t kModeAt = 100, kUidAt = 108, kGidAt = 116, kIdLen = 8;
constexpr size_t kSizeAt = 124, kSizeLen = 12;
constexpr size_t kMtimeAt = 136, kMtimeLen = 12;
constexpr size_t kChecksumAt = 148, kChecksumLen = 8;
constexpr size_t kTypeAt = 156;
constexpr size_t kMagicAt = 257;
constexpr size_t kPrefixAt = 345, kPrefixLen = 155;
// gzip (not zlib) framing for deflateInit2/inflateInit2.
constexpr int kGzipWindowBits = 15 + 16;

// `value` in octal, zero-padded to `len` - 1 digits and a NUL.
void PutOctal(char* field, size_t len, uint64_t value) {
  const std::string digits = absl::StrFormat("%0*o", len - 1, value);
  std::memcpy(field, digits.data(), len - 1);
  field[len - 1] = '\0';
}

// The sum of the header's bytes with its checksum field read as spaces.
uint32_t HeaderChecksum(const unsigned char* header) {
  uint32_t sum = 0;
  for (size_t i = 0; i < kBlock; ++i) {
    const bool in_field = i >= kChecksumAt && i < kChecksumAt + kChecksumLen;
    sum += in_field ? ' ' : header[i];
  }
  return sum;
}

std::string Header(const ArchiveEntry& entry) {
  std::string header(kBlock, '\0');
  char* h = header.data();
  std::memcpy(h + kNameAt, entry.path.data(), entry.path.size());
  PutOctal(h + kModeAt, kIdLen, 0644);
  PutOctal(h + kUidAt, kIdLen, 0);
  PutOctal(h + kGidAt, kIdLen, 0);
  PutOctal(h + kSizeAt, kSizeLen, entry.data.size());
  PutOctal(h + kMtimeAt, kMtimeLen, 0);  // the same bytes for the same files
  h[kTypeAt] = '0';
  std::memcpy(h + kMagicAt,
              "ustar\0"
              "00",
              8);
  const uint32_t sum =
      HeaderChecksum(reinterpret_cast<const unsigned char*>(h));
  const std::string digits = absl::StrFormat("%06o", sum);
  std::memcpy(h + kChecksumAt, digits.data(), 6);
  h[kChecksumAt + 6] = '\0';
  h[kChecksumAt + 7] = ' ';
  return header;
}

absl::StatusOr<std::string> Gzip(absl::string_view raw) {
  z_stream stream{};
  if (deflateInit2(&stream, Z_BEST_COMPRESSION, Z_DEFLATED, kGzipWindowBits,
                   /*memLevel=*/8, Z_DEFAULT_STRATEGY) != Z_OK) {
    return absl::InternalError("zlib: deflateInit2 failed");
  }
  std::string out(deflateBound(&stream, raw.size()), '\0');
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(raw.data()));
  stream.avail_in = static_cast<uInt>(raw.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  const int result = deflate(&stream, Z_FINISH);
  const size_t written = stream.total_out;
  deflateEnd(&stream);
  if (result != Z_STREAM_END) {
    return absl::InternalError("zlib: deflate did not finish");
  }
  out.resize(written);
  return out;
}

// The decompressed bytes of `compressed`, refused past `max_bytes`.
absl::StatusOr<std::string> Gunzip(absl::string_view compressed,
                                   int64_t max_bytes) {
  if (compressed.size() < 2 ||
      static_cast<unsigned char>(compressed[0]) != 0x1f ||
      static_cast<unsigned char>(compressed[1]) != 0x8b) {
    return absl::InvalidArgumentError("archive: not gzip-compressed");
  }
  z_stream stream{};
  if (inflateInit2(&stream, kGzipWindowBits) != Z_OK) {
    return absl::InternalError("zlib: inflateInit2 failed");
  }
  stream.next_in =
      reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data()));
  stream.avail_in = static_cast<uInt>(compressed.size());
  std::string out;
  char chunk[64 * 1024];
  int result = Z_OK;
  while (result != Z_STREAM_END) {
    stream.next_out = reinterpret_cast<Bytef*>(chunk);
    stream.avail_out = sizeof(chunk);
    result = inflate(&stream, Z_NO_FLUSH);
    if (result != Z_OK && result != Z_STREAM_END) break;
    const size_t produced = sizeof(chunk) - stream.avail_out;
    if (static_cast<int64_t>(out.size() + produced) > max_bytes) {
      inflateEnd(&stream);
      return absl::InvalidArgumentError(
          absl::StrCat("archive: uncompressed size exceeds the limit of ",
                       max_bytes, " bytes"));
    }
    out.append(chunk, produced);
    if (result == Z_OK && produced == 0 && stream.avail_in == 0) {
      result = Z_BUF_ERROR;  // input ended before the stream did
      break;
    }
  }
  const uInt left = stream.avail_in;
  inflateEnd(&stream);
  if (result != Z_STREAM_END) {
    return absl::InvalidArgumentError(
        result == Z_BUF_ERROR
            ? "archive: truncated (the compressed stream ends early)"
            : "archive: corrupt compressed data");
  }
  if (left != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("archive: ", left, " bytes after the compressed stream"));
  }
  return out;
}

// A NUL-terminated (or full) text field.
absl::string_view Field(const char* at, size_t len) {
  return absl::string_view(at, strnlen(at, len));
}

// An octal number field: digits, then NULs or spaces.
bool ParseOctal(absl::string_view field, uint64_t* value) {
  field = absl::StripAsciiWhitespace(field);
  if (field.empty() || field.size() > 11) return false;
  *value = 0;
  for (char c : field) {
    if (c < '0' || c > '7') return false;
    *value = *value * 8 + static_cast<uint64_t>(c - '0');
  }
  return true;
}

bool AllZero(const char* block) {
  return std::all_of(block, block + kBlock, [](char c) { return c == 0; });
}

}  // namespace

bool IsSafeArchivePath(absl::string_view path) {
  if (path.empty() || path.size() > kMaxArchivePath) return false;
  for (char c : path) {
    if (!absl::ascii_isalnum(c) && c != '.' && c != '-' && c != '_' &&
        c != '/') {
      return false;
    }
  }
  for (absl::string_view part : absl::StrSplit(path, '/')) {
    if (part.empty() || part == "." || part == "..") return false;
  }
  return true;
}

absl::StatusOr<std::string> WriteArchive(
    const std::vector<ArchiveEntry>& entries) {
  std::string tar;
  std::set<absl::string_view> seen;
  for (const ArchiveEntry& entry : entries) {
    if (!IsSafeArchivePath(entry.path)) {
      return absl::InvalidArgumentError(
          absl::StrCat("archive: unsafe entry path '", entry.path, "'"));
    }
    if (!seen.insert(entry.path).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("archive: entry '", entry.path, "' twice"));
    }
    tar += Header(entry);
    tar += entry.data;
    tar.append((kBlock - entry.data.size() % kBlock) % kBlock, '\0');
  }
  tar.append(2 * kBlock, '\0');
  return Gzip(tar);
}

absl::StatusOr<std::vector<ArchiveEntry>> ReadArchive(
    absl::string_view compressed, const ArchiveLimits& limits) {
  absl::StatusOr<std::string> tar =
      Gunzip(compressed, limits.max_uncompressed_bytes);
  if (!tar.ok()) return tar.status();
  std::vector<ArchiveEntry> entries;
  std::set<std::string> seen;
  size_t at = 0;
  while (true) {
    if (tar->size() - at < kBlock) {
      return absl::InvalidArgumentError(
          "archive: truncated (no end-of-archive blocks)");
    }
    const char* header = tar->data() + at;
    if (AllZero(header)) return entries;
    const std::string where = absl::StrCat("archive: header at byte ", at);
    uint64_t checksum = 0;
    if (!ParseOctal(Field(header + kChecksumAt, kChecksumLen), &checksum) ||
        checksum !=
            HeaderChecksum(reinterpret_cast<const unsigned char*>(header))) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": checksum does not match"));
    }
    if (header[kTypeAt] != '0' && header[kTypeAt] != '\0') {
      return absl::InvalidArgumentError(absl::StrCat(
          where, ": not a plain file (type '",
          absl::CEscape(absl::string_view(header + kTypeAt, 1)), "')"));
    }
    const std::string path(Field(header + kNameAt, kNameLen));
    if (!Field(header + kPrefixAt, kPrefixLen).empty() ||
        !IsSafeArchivePath(path)) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, ": unsafe entry path '", absl::CEscape(path), "'"));
    }
    uint64_t size = 0;
    if (!ParseOctal(Field(header + kSizeAt, kSizeLen), &size)) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": bad size field for '", path, "'"));
    }
    at += kBlock;
    if (size > tar->size() - at) {
      return absl::InvalidArgumentError(
          absl::StrCat("archive: '", path, "' is truncated"));
    }
    if (static_cast<int>(entries.size()) >= limits.max_entries) {
      return absl::InvalidArgumentError(absl::StrCat(
          "archive: more than the limit of ", limits.max_entries, " entries"));
    }
    if (!seen.insert(path).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("archive: entry '", path, "' twice"));
    }
    entries.push_back({path, tar->substr(at, size)});
    at += size + (kBlock - size % kBlock) % kBlock;
    at = std::min(at, tar->size());
  }
}

}  // namespace hpcai500
