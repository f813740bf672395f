// A submission's checks: see submission.h.
#include "server/coordinator/submission.h"

#include <optional>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status_macros.h"
#include "methodology/suite.h"
#include "server/coordinator/coordinator_state.h"
#include "server/coordinator/requests.h"

namespace hpcai500 {
namespace {

// One parsed spec checked against the queues and the registered nodes.
absl::StatusOr<PreparedSpec> PrepareSpec(const ParsedSubmission::Spec& parsed,
                                         const Scheduler& scheduler) {
  PreparedSpec prepared;
  ASSIGN_OR_RETURN(prepared.run_specs, parsed.run_specs);
  prepared.yaml = parsed.yaml;
  ASSIGN_OR_RETURN(prepared.choice,
                   ChooseQueue(prepared.run_specs.front(), scheduler.queues()));
  for (v1::RunSpec& run_spec : prepared.run_specs) {
    run_spec.set_time_limit_s(prepared.choice.time_limit_s);
  }
  const v1::RunSpec& spec = prepared.run_specs.front();
  v1::Run proposed;
  *proposed.mutable_spec() = spec;
  proposed.set_queue(prepared.choice.queue);
  const Scheduler::Request request = CoordinatorState::RequestFor(proposed);
  const int fitting = scheduler.EligibleNodes(request, /*up_only=*/false);
  if (scheduler.node_count() > 0 && fitting < spec.nodes()) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "the run needs %s each; of the %d registered node(s), %d can host it "
        "(see `hpcai500 nodes`)",
        scheduler.Needs(request, /*free=*/false), scheduler.node_count(),
        fitting));
  }
  return prepared;
}

}  // namespace

ParsedSubmission ParseSubmissionText(std::string_view spec_yaml,
                                     const Registry& registry) {
  ParsedSubmission parsed;
  absl::StatusOr<Suite> suite = ParseSuite(spec_yaml);
  if (!suite.ok()) {
    // One spec's own error says more than the suite's.
    absl::StatusOr<std::vector<v1::RunSpec>> single =
        ParseSubmission(spec_yaml, registry);
    parsed.error = single.ok() ? suite.status() : single.status();
    return parsed;
  }
  // hpcai500 sweep --nodes N, a nightly suite cut down to one spec: the
  // one item of a `suite:` file, not the whole text.
  if (suite->specs.size() == 1 && !suite->listed) {
    suite->specs[0] = std::string(spec_yaml);
  }
  parsed.suite = suite->specs.size() > 1 ? suite->name : "";
  for (std::string& yaml : suite->specs) {
    absl::StatusOr<std::vector<v1::RunSpec>> run_specs =
        ParseSubmission(yaml, registry);
    parsed.specs.push_back({std::move(yaml), std::move(run_specs)});
  }
  return parsed;
}

absl::StatusOr<std::vector<PreparedSpec>> PrepareSpecs(
    const ParsedSubmission& parsed, const Scheduler& scheduler) {
  std::vector<PreparedSpec> prepared;
  for (size_t i = 0; i < parsed.specs.size(); ++i) {
    absl::StatusOr<PreparedSpec> one = PrepareSpec(parsed.specs[i], scheduler);
    if (!one.ok()) {
      if (parsed.specs.size() == 1) return one.status();
      return absl::Status(one.status().code(),
                          absl::StrCat("suite ", parsed.suite, ", spec ", i + 1,
                                       ": ", one.status().message()));
    }
    prepared.push_back(*std::move(one));
  }
  return prepared;
}

absl::Status CheckSweepsAreOwn(const std::vector<PreparedSpec>& prepared,
                               const std::string& user, Store& store) {
  std::set<std::string> sweeps;
  for (const PreparedSpec& one : prepared) {
    const std::string& sweep = one.run_specs.front().sweep();
    if (sweep.empty() || !sweeps.insert(sweep).second) continue;
    ASSIGN_OR_RETURN(const std::optional<std::string> owner,
                     store.OtherSweepOwner(sweep, user));
    if (owner.has_value()) {
      return absl::PermissionDeniedError(absl::StrCat(
          "field 'sweep': sweep '", sweep,
          "' holds another user's runs; a sweep is its submitter's (hpcai500 "
          "sweep names a new one)"));
    }
  }
  return absl::OkStatus();
}

}  // namespace hpcai500
