// The agent's side of a pre-flight: see preflight_runner.h.
#include "agent/node/preflight_runner.h"

#include <signal.h>
#include <unistd.h>

#include <cmath>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "agent/system/files.h"
#include "common/event_keys.h"
#include "common/events.h"
#include "common/log.h"
#include "common/vocabulary.h"

namespace hpcai500::agent {
namespace {

namespace keys = event_keys;

// The line is short; anything much longer is not the worker's.
constexpr size_t kMaxOutputBytes = 64 * 1024;
// Bounds of what an order may ask, whoever sent it.
constexpr int64_t kMaxBudgetMs = 60'000;
constexpr int64_t kMaxTimeoutMs = 120'000;

}  // namespace

absl::StatusOr<v1::PreflightDone> ParsePreflightOutput(absl::string_view text) {
  std::optional<EventLine> found;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    absl::StatusOr<EventLine> event =
        ParseEventLine(std::string_view(line.data(), line.size()));
    if (event.ok() && event->key == keys::kPreflight &&
        event->value.is_object()) {
      found = std::move(*event);
    }
  }
  if (!found.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the worker printed no ", keys::kPreflight, " line"));
  }
  v1::PreflightDone done;
  for (const char* figure :
       {keys::kPreflightGemmGflops, keys::kPreflightMemoryGbps,
        keys::kPreflightHostToDeviceGbps, keys::kPreflightAllReduceGbps}) {
    auto it = found->value.find(figure);
    if (it == found->value.end() || !it->is_number()) continue;
    const double value = it->get<double>();
    if (std::isfinite(value) && value >= 0)
      (*done.mutable_figures())[figure] = value;
  }
  auto seconds = found->value.find(keys::kPreflightSeconds);
  if (seconds != found->value.end() && seconds->is_number()) {
    done.set_seconds(seconds->get<double>());
  }
  auto device = found->metadata.find(keys::kMetaDevice);
  if (device != found->metadata.end() && device->is_string()) {
    done.set_device(device->get<std::string>().substr(0, 64));
  }
  return done;
}

PreflightRunner::PreflightRunner(std::string worker_path,
                                 std::vector<std::string> env, bool cuda,
                                 std::string output_dir,
                                 ProcessLauncher* launcher)
    : worker_path_(std::move(worker_path)),
      env_(std::move(env)),
      cuda_(cuda),
      output_dir_(std::move(output_dir)),
      launcher_(launcher) {}

PreflightRunner::~PreflightRunner() {
  if (!running_.has_value()) return;
  launcher_->SignalGroup(running_->pid, SIGKILL);
  while (!launcher_->TryWait(running_->pid).has_value()) {
    absl::SleepFor(absl::Milliseconds(10));
  }
}

v1::AgentMessage PreflightRunner::Failed(int64_t id, const std::string& error) {
  v1::AgentMessage message;
  message.mutable_preflight_done()->set_id(id);
  message.mutable_preflight_done()->set_error(error);
  return message;
}

std::optional<v1::AgentMessage> PreflightRunner::Start(
    const v1::PreflightOrder& order) {
  if (running_.has_value()) {
    return Failed(order.id(), absl::StrCat("pre-flight ", running_->id,
                                           " still runs on this node"));
  }
  if (!Parse<Precision>(order.precision()).has_value()) {
    return Failed(order.id(),
                  absl::StrCat("precision '", order.precision(), "' is not ",
                               NamesInProse<Precision>()));
  }
  if (order.budget_ms() < 100 || order.budget_ms() > kMaxBudgetMs ||
      order.timeout_ms() <= order.budget_ms() ||
      order.timeout_ms() > kMaxTimeoutMs) {
    return Failed(order.id(),
                  absl::StrCat("budget ", order.budget_ms(), " ms and timeout ",
                               order.timeout_ms(),
                               " ms: the budget must be in [100, 60000] ms "
                               "and the timeout above it, at most 120000 ms"));
  }
  Running run;
  run.id = order.id();
  run.output = absl::StrCat(output_dir_, "/preflight-", order.id(), ".out");
  ::unlink(run.output.c_str());
  LaunchSpec spec;
  spec.argv = {
      worker_path_,  "preflight",
      "--device",    std::string(Name(cuda_ ? Device::kCuda : Device::kCpu)),
      "--precision", order.precision(),
      "--budget-ms", absl::StrCat(order.budget_ms())};
  spec.env = env_;
  spec.stdout_path = run.output;
  spec.stderr_path = run.output;
  run.started = absl::Now();
  run.deadline = run.started + absl::Milliseconds(order.timeout_ms());
  absl::StatusOr<pid_t> pid = launcher_->Launch(spec);
  if (!pid.ok()) return Failed(order.id(), std::string(pid.status().message()));
  run.pid = *pid;
  LogInfo(absl::StrCat("pre-flight ", run.id, ": started (pid ", run.pid, ")"));
  running_ = std::move(run);
  return std::nullopt;
}

std::optional<v1::AgentMessage> PreflightRunner::Poll() {
  if (!running_.has_value()) return std::nullopt;
  Running& run = *running_;
  std::optional<ExitStatus> exit = launcher_->TryWait(run.pid);
  const bool late = !exit.has_value() && absl::Now() >= run.deadline;
  if (!exit.has_value() && !late) return std::nullopt;
  if (late) {
    launcher_->SignalGroup(run.pid, SIGKILL);
    while (!(exit = launcher_->TryWait(run.pid)).has_value()) {
      absl::SleepFor(absl::Milliseconds(10));
    }
  }
  const double seconds = absl::ToDoubleSeconds(absl::Now() - run.started);
  const std::string text = ReadFileHead(run.output, kMaxOutputBytes);
  ::unlink(run.output.c_str());
  const int64_t id = run.id;
  running_.reset();
  v1::AgentMessage message;
  if (late) {
    message = Failed(
        id, absl::StrFormat("killed after %.0f s (its timeout)", seconds));
  } else if (exit->exit_code != 0) {
    // The worker's last line says why.
    std::vector<absl::string_view> lines =
        absl::StrSplit(text, '\n', absl::SkipEmpty());
    message = Failed(
        id, absl::StrCat(
                "hpcai500-worker preflight ",
                exit->signal != 0
                    ? absl::StrCat("was killed by signal ", exit->signal)
                    : absl::StrCat("exited ", exit->exit_code),
                lines.empty() ? "" : ": ",
                lines.empty() ? "" : std::string(lines.back()).substr(0, 512)));
  } else if (absl::StatusOr<v1::PreflightDone> done =
                 ParsePreflightOutput(text);
             done.ok()) {
    *message.mutable_preflight_done() = std::move(*done);
    message.mutable_preflight_done()->set_id(id);
    // The node's whole cost, LibTorch's start included.
    message.mutable_preflight_done()->set_seconds(seconds);
  } else {
    message = Failed(id, std::string(done.status().message()));
  }
  LogInfo(absl::StrCat("pre-flight ", id, ": ",
                       message.preflight_done().error().empty()
                           ? absl::StrFormat("done in %.1f s", seconds)
                           : message.preflight_done().error()));
  return message;
}

}  // namespace hpcai500::agent
