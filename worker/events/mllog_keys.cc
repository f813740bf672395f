#include "worker/events/mllog_keys.h"

namespace hpcai500::worker {

namespace {

void Point(EventLog& log, std::string_view key, std::string_view value,
           SourceLine where = SourceLine::Here()) {
  log.Emit(EventType::kPointInTime, key, value, /*metadata=*/{}, where);
}

}  // namespace

void EmitMlperfSubmission(EventLog& log, const WorkerOptions& options) {
  const std::optional<MllogSubmission>& submission =
      options.args.mllog_submission;
  if (!submission) return;
  Point(log, "submission_org", JsonString(submission->org));
  Point(log, "submission_platform", JsonString(submission->platform));
  Point(log, "submission_division", JsonString("open"));
  Point(log, "submission_status", JsonString(submission->status));
  Point(log, "cache_clear", "true");
}

void EmitMlperfHyperparameters(EventLog& log, const WorkerOptions& options,
                               const MlperfRunFacts& facts) {
  const ConfigInfo& c = options.config;
  Point(log, "opt_name", JsonString(c.optimizer));
  Point(log, "opt_base_learning_rate", JsonDouble(facts.base_learning_rate));
  Point(log, "opt_learning_rate_warmup_epochs", JsonInt(c.warmup_epochs));
  Point(log, "opt_momentum", JsonDouble(c.momentum));
  Point(log, "opt_weight_decay", JsonDouble(c.weight_decay));
  Point(log, "label_smoothing", JsonDouble(c.label_smoothing));
  // Every optimizer step sees one global batch: no accumulation.
  Point(log, "gradient_accumulation_steps", JsonInt(1));
  if (c.optimizer == "lars") {
    // The LARS names of MLPerf's resnet rules. The schedule is a cosine to
    // zero (no polynomial decay keys), and the trust ratio has no epsilon.
    Point(log, "lars_opt_base_learning_rate",
          JsonDouble(facts.base_learning_rate));
    Point(log, "lars_opt_end_learning_rate", JsonDouble(0.0));
    Point(log, "lars_opt_learning_rate_warmup_epochs",
          JsonInt(c.warmup_epochs));
    Point(log, "lars_opt_momentum", JsonDouble(c.momentum));
    Point(log, "lars_opt_weight_decay", JsonDouble(c.weight_decay));
    Point(log, "lars_epsilon", JsonDouble(0.0));
    Point(log, "lars_opt_trust_coefficient", JsonDouble(kLarsTrustCoefficient));
  }
}

}  // namespace hpcai500::worker
