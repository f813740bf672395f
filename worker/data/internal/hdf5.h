// HDF5 plumbing shared by the Extreme Weather reader (ewa_file.cc) and
// generator (ewa_generator.cc): the process-wide HDF5 mutex, a handle that
// closes itself, and the errors both raise. Private to worker/data/.
//
// Thread-safety: Debian's serial HDF5 is not thread-safe, so every HDF5 call
// of the process holds Hdf5Mutex().
#ifndef HPCAI500_WORKER_DATA_INTERNAL_HDF5_H_
#define HPCAI500_WORKER_DATA_INTERNAL_HDF5_H_

#include <mutex>
#include <stdexcept>
#include <string>

#ifdef HPCAI500_HAVE_HDF5
#include <hdf5.h>
#endif

namespace hpcai500::worker::internal {

// Throws std::runtime_error "EWA file PATH: WHAT".
[[noreturn]] inline void FailEwaFile(const std::string& path,
                                     const std::string& what) {
  throw std::runtime_error("EWA file " + path + ": " + what);
}

#ifdef HPCAI500_HAVE_HDF5
// The one mutex every HDF5 call of the process holds (one instance: an
// inline function's static is shared by all translation units).
inline std::mutex& Hdf5Mutex() {
  static std::mutex mu;
  return mu;
}

// Turns off HDF5's own error printing (errors are reported by the callers).
inline void SilenceHdf5Errors() {
  static std::once_flag once;
  std::call_once(once, [] { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); });
}

// Closes an HDF5 handle with `close` when it goes out of scope.
class H5Handle {
 public:
  H5Handle(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  ~H5Handle() {
    if (id_ >= 0) close_(id_);
  }
  H5Handle(const H5Handle&) = delete;
  H5Handle& operator=(const H5Handle&) = delete;
  hid_t get() const { return id_; }

 private:
  hid_t id_;
  herr_t (*close_)(hid_t);
};
#else
// Throws the error of a build without HDF5 for `what` ("reading FILE").
[[noreturn]] inline void NoHdf5(const std::string& what) {
  throw std::runtime_error(
      "built without HDF5: " + what +
      " needs libhdf5-dev at configure time (scripts/install-deps.sh)");
}
#endif  // HPCAI500_HAVE_HDF5

}  // namespace hpcai500::worker::internal

#endif  // HPCAI500_WORKER_DATA_INTERNAL_HDF5_H_
