// A stand-in for libnccl.so.2 and libmpi.so.40 in the inventory tests: the
// two version calls the agent makes, answering as NCCL 2.21.5 and Debian's
// OpenMPI 4.1.4 do.
#include <cstdio>
#include <cstring>

extern "C" {

int ncclGetVersion(int* version) {
  *version = 22105;  // NCCL_VERSION_CODE of 2.21.5
  return 0;          // ncclSuccess
}

int MPI_Get_library_version(char* version, int* length) {
  const char kText[] =
      "Open MPI v4.1.4, package: Debian OpenMPI, ident: 4.1.4, repo rev: "
      "v4.1.4, May 26, 2022";
  std::memcpy(version, kText, sizeof(kText));
  *length = static_cast<int>(std::strlen(kText));
  return 0;  // MPI_SUCCESS
}

}  // extern "C"
