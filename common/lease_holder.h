// Who holds a worker's lease (common/worker_lease.h): the agent that started
// the worker, which names itself through kLeaseHolderEnvVar. While that
// agent lives, it fences its workers itself, so a lease it renewed late
// must not stop them; once it is gone, only the lease can. The holder is
// named, not taken from getppid() when the worker gets to it: an agent
// killed before that (LibTorch takes seconds to load on a busy node) left
// init as the worker's parent, which then counted as a live holder, and
// the worker trained on past its lease without end.
//
// Standard library and POSIX only (the worker links it). Thread-safe: free
// functions; what ParentIsHolder returns may be called from any thread.
#ifndef HPCAI500_COMMON_LEASE_HOLDER_H_
#define HPCAI500_COMMON_LEASE_HOLDER_H_

#include <functional>

namespace hpcai500 {

// The variable through which an agent names itself to the workers it
// starts: its pid, in decimal.
inline constexpr char kLeaseHolderEnvVar[] = "HPCAI500_LEASE_HOLDER_PID";

// For LeaseWatchdog's holder_alive: a function that is true while this
// process's parent is the process `holder_pid` names (kLeaseHolderEnvVar's
// value: plain digits, a pid above 1). Null, so that the lease alone
// decides, when `holder_pid` is null or names no such pid.
std::function<bool()> ParentIsHolder(const char* holder_pid);

}  // namespace hpcai500

#endif  // HPCAI500_COMMON_LEASE_HOLDER_H_
