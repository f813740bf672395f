// JPEG files for the worker's tests, encoded with libjpeg-turbo (tests that
// include this define HPCAI500_HAVE_TURBOJPEG and link it).
#ifndef HPCAI500_TESTS_WORKER_JPEG_UTIL_H_
#define HPCAI500_TESTS_WORKER_JPEG_UTIL_H_

#include <gtest/gtest.h>
#include <turbojpeg.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

namespace hpcai500::testing {

// `rgb` (width x height, packed RGB) as a JPEG of `subsampling` (TJSAMP_*),
// `quality` and `flags` (TJFLAG_PROGRESSIVE, ...).
inline std::vector<uint8_t> EncodeJpeg(const std::vector<uint8_t>& rgb,
                                       int width, int height, int subsampling,
                                       int quality = 90, int flags = 0) {
  tjhandle tj = tjInitCompress();
  unsigned char* jpeg = nullptr;
  unsigned long size = 0;
  EXPECT_EQ(tjCompress2(tj, rgb.data(), width, /*pitch=*/0, height, TJPF_RGB,
                        &jpeg, &size, subsampling, quality, flags),
            0)
      << tjGetErrorStr2(tj);
  std::vector<uint8_t> bytes(jpeg, jpeg + size);
  tjFree(jpeg);
  tjDestroy(tj);
  return bytes;
}

inline void WriteFileBytes(const std::string& path,
                           const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  EXPECT_TRUE(out.good()) << path;
}

}  // namespace hpcai500::testing

#endif  // HPCAI500_TESTS_WORKER_JPEG_UTIL_H_
