// A shared library opened with dlopen and closed with the object.
#include "agent/node/internal/shared_library.h"

#include <dlfcn.h>

#include <cstring>

namespace hpcai500::agent_internal {

SharedLibrary::SharedLibrary(const std::string& name, bool keep_loaded)
    : handle_(::dlopen(name.c_str(), RTLD_LAZY | RTLD_LOCAL |
                                         (keep_loaded ? RTLD_NODELETE : 0))) {
  if (handle_ == nullptr) {
    const char* error = ::dlerror();
    error_ = error != nullptr ? error : "cannot load " + name;
  }
}

SharedLibrary::~SharedLibrary() {
  if (handle_ != nullptr) ::dlclose(handle_);
}

void* SharedLibrary::FindSymbol(const char* symbol) const {
  return handle_ == nullptr ? nullptr : ::dlsym(handle_, symbol);
}

std::string FromBuffer(const char* buffer, size_t size) {
  return std::string(buffer, strnlen(buffer, size));
}

}  // namespace hpcai500::agent_internal
