// The `make-ewa` command of hpcai500-worker: writes one synthetic Extreme
// Weather file (worker/data/ewa_generator.h) from its flags.
//
// Thread-safety: call from one thread; it writes to stdout and stderr.
#ifndef HPCAI500_WORKER_DATA_MAKE_EWA_H_
#define HPCAI500_WORKER_DATA_MAKE_EWA_H_

namespace hpcai500::worker {

// `hpcai500-worker make-ewa --out FILE --samples N --height H --width W
// --seed S` (also --flag=value). argv[0] is the subcommand name and is
// skipped. Returns 0 on success, 2 for a usage error, 1 when writing fails;
// messages go to stderr.
int MakeEwaMain(int argc, char** argv);

}  // namespace hpcai500::worker

#endif  // HPCAI500_WORKER_DATA_MAKE_EWA_H_
