// hpcai500-worker: trains one rank of a benchmark run; see worker/engine.h.
#include "worker/engine.h"

int main(int argc, char** argv) {
  return hpcai500::worker::WorkerMain(argc, argv);
}
