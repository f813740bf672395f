// A shared library opened with dlopen for the lifetime of an object, and
// the text a C library wrote into a buffer: how the inventory asks NVML,
// NCCL and MPI without linking them. Standard library only.
//
// Not thread-safe: dlopen/dlclose of one library from one thread at a time.
#ifndef HPCAI500_AGENT_NODE_INTERNAL_SHARED_LIBRARY_H_
#define HPCAI500_AGENT_NODE_INTERNAL_SHARED_LIBRARY_H_

#include <cstddef>
#include <string>

namespace hpcai500::agent_internal {

class SharedLibrary {
 public:
  // Loads `name` (a name dlopen searches for, or a path). `keep_loaded`:
  // never unloaded, for a library whose static state (OpenMPI's) is not
  // made to be torn down in a running process.
  SharedLibrary(const std::string& name, bool keep_loaded);
  ~SharedLibrary();
  SharedLibrary(const SharedLibrary&) = delete;
  SharedLibrary& operator=(const SharedLibrary&) = delete;

  bool loaded() const { return handle_ != nullptr; }
  // Why it did not load (dlerror's text).
  const std::string& error() const { return error_; }

  // The function `symbol`, or null when the library lacks it (or did not
  // load).
  template <typename Fn>
  Fn* Find(const char* symbol) const {
    return reinterpret_cast<Fn*>(FindSymbol(symbol));
  }

 private:
  void* FindSymbol(const char* symbol) const;

  void* handle_;
  std::string error_;
};

// The C string a library wrote into `buffer` of `size` bytes, even without
// its terminator.
std::string FromBuffer(const char* buffer, size_t size);

}  // namespace hpcai500::agent_internal

#endif  // HPCAI500_AGENT_NODE_INTERNAL_SHARED_LIBRARY_H_
