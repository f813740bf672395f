// Queues (Slurm's partitions) from the file `hpcai500d --queues FILE` names,
// and where a submitted run waits in them.
//
//   queues:
//     - name: cpu
//       default: true          # runs that name no queue wait here
//       nodes: {}              # labels a node carries to be in the queue
//       priority: 100          # a run's default priority
//       max_priority: 1000     # the most a spec may ask for
//       max_time_limit: 24h    # 0 or absent: none
//       preflight_max_age: 1h  # a multi-node ranked run starts only on
//                              # nodes with a pre-flight this fresh
//     - name: gpu
//       nodes: {accelerator: h200}
//
// Without the file there is one queue, "default", over every node.
//
// Thread-safe: free functions.
#ifndef HPCAI500_SERVER_COORDINATOR_QUEUES_H_
#define HPCAI500_SERVER_COORDINATOR_QUEUES_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/hpcai500.pb.h"
#include "server/coordinator/scheduler.h"

namespace hpcai500 {

// Parses a queues file. InvalidArgument naming the queue (by index or
// name), the field and the reason: unknown keys, a bad name, names given
// twice, no default or several, priority above max_priority.
absl::StatusOr<std::vector<Scheduler::Queue>> ParseQueues(
    std::string_view yaml);

// Where a run of `spec` waits: its queue, its priority and its time limit
// (the queue's max_time_limit when the spec sets none).
struct QueueChoice {
  std::string queue;
  int32_t priority = 0;
  int64_t time_limit_s = 0;
};
// InvalidArgument naming the field: an unknown queue (listing the known
// ones), a priority above the queue's max_priority, a time limit above its
// max_time_limit.
absl::StatusOr<QueueChoice> ChooseQueue(
    const v1::RunSpec& spec, const std::vector<Scheduler::Queue>& queues);

// The queue as the API shows it (without the live counts).
v1::Queue QueueToProto(const Scheduler::Queue& queue);

}  // namespace hpcai500

#endif  // HPCAI500_SERVER_COORDINATOR_QUEUES_H_
