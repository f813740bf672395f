// The result-bundle reader (methodology/bundle.h, bundle_verify.h) on any
// bytes: VerifyBundle never fails as a call, stays within its limits, and
// only a report whose every check held carries the manifest and contents.
// The first byte picks the form: odd, the rest is the bundle file as it is
// (gzip framing and all); even, the rest is the ustar archive inside, which
// is gzip-compressed here first, so that the mutations reach the archive,
// manifest and file parsers past gzip's checksum.
#include <zlib.h>

#include <string>

#include "methodology/bundle_verify.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

// `raw` gzip-compressed (fast: level 1).
std::string Gzip(std::string_view raw) {
  z_stream stream{};
  deflateInit2(&stream, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&stream, raw.size()), '\0');
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(raw.data()));
  stream.avail_in = static_cast<uInt>(raw.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  deflate(&stream, Z_FINISH);
  out.resize(stream.total_out);
  deflateEnd(&stream);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using hpcai500::FuzzCheck;
  if (size == 0) return 0;
  const std::string_view rest = hpcai500::FuzzText(data + 1, size - 1);
  const std::string bundle =
      (data[0] & 1) != 0 ? std::string(rest) : Gzip(rest);
  hpcai500::VerifyOptions options;
  options.limits.max_uncompressed_bytes = 4 << 20;
  options.limits.max_entries = 64;
  const hpcai500::BundleReport report =
      hpcai500::VerifyBundle(bundle, hpcai500::Registry::Builtin(), options);
  FuzzCheck(!report.checks.empty(), "a report has at least one check");
  if (report.ok()) {
    FuzzCheck(report.manifest.has_value() && report.contents.has_value(),
              "a verified bundle has its manifest and contents");
    FuzzCheck(report.recomputed.size() == report.contents->runs.size(),
              "every run of a verified bundle was recomputed");
  }
  if (report.contents.has_value()) {
    FuzzCheck(!report.contents->runs.empty(), "contents hold a run");
  }
  return 0;
}
