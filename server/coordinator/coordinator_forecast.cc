// The forecast's half of the Coordinator: after each new evaluation of a
// running run, whether it will reach its target (common/forecast.h), kept
// with the run; a run whose spec asks for it (abort_if_hopeless after
// min_epochs) is aborted once the forecast says it will not.
// Declared in coordinator.h; docs/design.md "Forecast and early abort" says
// why.
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/forecast.h"
#include "common/log.h"
#include "server/coordinator/coordinator.h"

namespace hpcai500 {

void Coordinator::ForecastLocked(RunRecord& record) {
  if (record.run.state() != v1::RUN_STATE_RUNNING) return;
  const v1::RunSpec& spec = record.run.spec();
  const ConfigInfo* config =
      registry_->FindConfig(spec.workload(), spec.config());
  // A config without a target (noop) has nothing to forecast.
  if (config == nullptr || config->target <= 0) return;
  const std::vector<CurvePoint> curve = QualityCurve(record.run.epochs());
  if (curve.empty()) return;
  const v1::Forecast& latest = record.run.forecast();
  // Only after a new evaluation: most event batches carry none.
  if (record.run.has_forecast() && latest.epoch() == curve.back().epoch &&
      latest.points() == static_cast<int>(curve.size())) {
    return;
  }
  absl::StatusOr<v1::Forecast> forecast =
      ForecastQuality(curve, config->target, spec.epochs());
  if (!forecast.ok()) return;  // not enough epochs yet
  if (!IsHopeless(spec, *forecast)) {
    forecast->set_summary(ForecastText(*forecast));
    *record.run.mutable_forecast() = *forecast;
    PersistLocked(record);  // a restart keeps the latest forecast
    record.Changed(absl::StrCat("forecast: ", forecast->summary()));
    return;
  }
  forecast->set_node_hours_saved(NodeHoursLeft(record.run, forecast->epoch()));
  forecast->set_summary(ForecastText(*forecast));
  *record.run.mutable_forecast() = *forecast;
  const std::string why = absl::StrFormat(
      "hopeless after epoch %d (abort_if_hopeless %g): %s", forecast->epoch(),
      spec.abort_if_hopeless(), forecast->summary());
  LogInfo(absl::StrCat("run ", record.run.id(), " aborted: ", why));
  EndRunLocked(record, v1::RUN_STATE_ABORTED, why, /*cancel_workers=*/true);
}

}  // namespace hpcai500
