// hpcai500-worker: trains one rank of a benchmark run (see worker/engine.h),
// or, as `hpcai500-worker make-ewa ...`, writes a synthetic Extreme Weather
// file in the dataset's layout (see worker/ewa_data.h).
#include <cstring>

#include "worker/engine.h"
#include "worker/ewa_data.h"

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "make-ewa") == 0) {
    return hpcai500::worker::MakeEwaMain(argc - 1, argv + 1);
  }
  return hpcai500::worker::WorkerMain(argc, argv);
}
