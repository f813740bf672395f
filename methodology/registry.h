// The workload registry: workloads, configs, models, targets, n and epoch
// budgets, parsed from methodology/registry.ini (compiled in), and the
// reference recipe's batch rule. It depends on the C++ standard library and the
// std-only vocabulary only, so the worker links it without abseil.
//
// Thread-safe: a Registry is immutable after Parse(); Builtin() is initialised
// once.
#ifndef HPCAI500_METHODOLOGY_REGISTRY_H_
#define HPCAI500_METHODOLOGY_REGISTRY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/vocabulary.h"

namespace hpcai500 {

// The workload that trains nothing (registry.ini): its worker rendezvouses,
// reports one epoch of zero FLOPs and exits. It measures dispatch and checks
// a node's health; it has no target (0), scores zero and is never on the
// leaderboard.
inline constexpr char kNoopWorkload[] = "noop";

struct WorkloadInfo {
  std::string name;     // image_classification
  std::string title;    // Image Classification
  std::string metric;   // top1 | map50
  double exponent = 5;  // n in VFLOPS = FLOPS x (quality / target)^n
};

struct ConfigInfo {
  std::string workload;
  std::string name;
  std::string model;
  std::string dataset;
  std::string data_dir;
  double target = 0;
  int epochs = 0;
  int batch_size = 0;
  std::string optimizer;
  double lr = 0;  // per 256 images of global batch
  double momentum = 0;
  double weight_decay = 0;
  int warmup_epochs = 0;
  double label_smoothing = 0;
  int64_t train_samples = 0;  // 0: all
  int64_t eval_samples = 0;   // 0: all
  bool real_data = true;
  bool implemented = true;
  // Extreme Weather: the years whose <data_dir>/climo_YYYY.h5 files train
  // and evaluate.
  std::vector<int> train_years;
  std::vector<int> eval_years;
  // > 0: the data are generated (hpcai500-worker make-ewa): a year file
  // missing from data_dir is written with this many samples on this grid,
  // seeded by its year. 0: real data, never generated.
  int64_t generate_samples = 0;
  int64_t generate_height = 0;
  int64_t generate_width = 0;
  // Extreme Weather detector size: RoIs sampled per image for the box head
  // and the width of its two fully connected layers (0: Faster R-CNN's
  // 512 and 1024).
  int64_t rois_per_image = 0;
  int64_t box_head_width = 0;
  // The fast paths (common/fast_paths.h) this config can take, by name, as
  // the worker can serve them (its model, its data); a spec turning on
  // another is refused at submit. tests/worker/flags_test.cc holds the list
  // to the worker's own rules.
  std::vector<std::string> fast_paths;
};

// A reference convergence point (MLCommons' RCP): how many epochs reference
// runs of one config at one global batch size took to first reach its
// target, and how those runs were made. docs/design.md "Convergence check".
struct ReferenceConvergence {
  std::string workload;
  std::string config;
  int64_t global_batch = 0;  // per-rank batch x ranks
  // Epochs to target of each reference run (at least 3: the check drops the
  // fastest and the slowest).
  std::vector<double> epochs;
  std::string made_by;  // the command, date and machine that made them
};

class Registry {
 public:
  // Parses registry text. Returns nullopt and sets *error (naming the line)
  // on a syntax error, an unknown key, a bad number or a config whose
  // workload is not declared.
  static std::optional<Registry> Parse(std::string_view text,
                                       std::string* error);

  // The registry compiled into this binary. Aborts if it does not parse
  // (a build-time invariant: tests parse it).
  static const Registry& Builtin();

  // The text Builtin() was parsed from.
  static std::string_view BuiltinText();

  // Return nullptr when absent. Pointers live as long as the Registry.
  const WorkloadInfo* FindWorkload(std::string_view name) const;
  const ConfigInfo* FindConfig(std::string_view workload,
                               std::string_view config) const;

  const std::vector<WorkloadInfo>& workloads() const { return workloads_; }
  const std::vector<ConfigInfo>& configs() const { return configs_; }

  // The reference convergence points of one config, by global batch
  // (smallest first); empty when it has none.
  std::vector<ReferenceConvergence> References(std::string_view workload,
                                               std::string_view config) const;

 private:
  std::vector<WorkloadInfo> workloads_;
  std::vector<ConfigInfo> configs_;
  std::vector<ReferenceConvergence> references_;
};

// The reference recipe's per-rank batch for `config` in `precision`: the
// config's batch_size (its fp32 batch), doubled in mixed precision (the
// HPC AI500 reference trains ResNet-50 at 128 per GPU in fp32 and 256 in
// mixed precision). Level hardware keeps exactly this batch.
int ReferenceBatchSize(const ConfigInfo& config, Precision precision);

// The worker's per-rank batch when no batch size is given: the reference
// batch for configs on the imagenet dataset (whose recipe publishes both
// variants), the config's batch_size for every other config.
int DefaultBatchSize(const ConfigInfo& config, Precision precision);

}  // namespace hpcai500

#endif  // HPCAI500_METHODOLOGY_REGISTRY_H_
