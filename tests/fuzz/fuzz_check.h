// What the fuzz targets share: the input as text, and the check that turns
// a broken contract into a crash libFuzzer keeps.
#ifndef HPCAI500_TESTS_FUZZ_FUZZ_CHECK_H_
#define HPCAI500_TESTS_FUZZ_FUZZ_CHECK_H_

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace hpcai500 {

inline std::string_view FuzzText(const uint8_t* data, size_t size) {
  return std::string_view(reinterpret_cast<const char*>(data), size);
}

// Aborts, naming the broken contract and what broke it, unless `ok`.
inline void FuzzCheck(bool ok, std::string_view contract,
                      std::string_view detail = {}) {
  if (ok) return;
  std::fprintf(stderr, "contract broken: %.*s\n%.*s\n",
               static_cast<int>(contract.size()), contract.data(),
               static_cast<int>(detail.size()), detail.data());
  std::abort();
}

}  // namespace hpcai500

#endif  // HPCAI500_TESTS_FUZZ_FUZZ_CHECK_H_
