// The pages in real Chromium, driven by PyPI's playwright from the venv
// (tests/web/pages_browser.py): hpcai500d over a store holding finished
// runs of several systems and levels, written through the Store API as the
// coordinator writes them (training each would take minutes apiece on two
// cores), and one real smoke run trained live on a real agent while the
// page watches it. Screenshots land in build/test-artifacts/pages/.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/events.h"
#include "methodology/registry.h"
#include "methodology/scoring.h"
#include "server/store/store.h"
#include "tests/integration/harness.h"
#include "tests/server/coordinator/test_events.h"
#include "tests/server/store/store_calls.h"

namespace hpcai500::testing {
namespace {

using std::chrono::seconds;

constexpr char kChromium[] = "/usr/bin/chromium";
constexpr char kWorkload[] = "image_classification";
constexpr char kConfig[] = "fashion_mnist_smoke";
constexpr int kEpochs = 2;
constexpr int64_t kSamplesPerRankEpoch = 3000;
constexpr int64_t kDay = 24 * 3600 * 1000;
constexpr int64_t kStart = 1764547200000;  // 2025-12-01

// The venv's python (CMake's HPCAI500_PYTHON), which has playwright.
constexpr char kPython[] = HPCAI500_PYTHON;

// Why kPython cannot drive the browser (it is missing, or cannot import
// playwright's sync API), for the skip; "" when it can.
std::string WhyNoPlaywright() {
  if (access(kPython, X_OK) != 0) {
    return absl::StrCat(kPython, " is missing (scripts/install-deps.sh makes ",
                        "the venv of scripts/requirements.txt)");
  }
  const CommandResult imported =
      RunCommand({kPython, "-c", "import playwright.sync_api"}, seconds(60));
  if (imported.exit_code != 0) {
    // The traceback's last line: "ModuleNotFoundError: No module named ...".
    const absl::string_view error =
        absl::StripTrailingAsciiWhitespace(imported.err);
    return absl::StrCat(
        kPython, " cannot import playwright (pinned in ",
        "scripts/requirements.txt): ", error.substr(error.rfind('\n') + 1));
  }
  return "";
}

// One finished submission to store: its spec and what each repetition
// scored. Its ranks train at `rank_speeds` samples/s (one per rank).
struct Planned {
  std::string name;
  std::string system;
  std::string level = "system";
  int nodes = 1;
  int ranks_per_node = 2;
  std::string device = "cuda";
  std::string device_model = "NVIDIA H200";
  std::string precision = "bf16";
  std::string compression = "none";
  bool ranked = true;
  std::string user = "ana";
  std::vector<double> valid_flops;  // one per repetition
  double flops_factor = 1.5;        // FLOPS = factor x Valid FLOPS
  double quality = 0.8;
  double train_seconds = 60;
  double energy_joules = 0;  // of the whole run; 0: not measured
  int64_t day = 0;           // created kStart + day days
  std::vector<double> rank_speeds;
  std::string sweep;    // the sweep that submitted it; empty: none
  std::string scaling;  // strong or weak with a sweep
};

Planned Plan(std::string name, std::string system,
             std::vector<double> valid_flops, int64_t day) {
  Planned plan;
  plan.name = std::move(name);
  plan.system = std::move(system);
  plan.valid_flops = std::move(valid_flops);
  plan.day = day;
  return plan;
}

std::string EpochStatsValue(double speed, double energy) {
  const double seconds = kSamplesPerRankEpoch / speed;
  std::string value = absl::StrCat(
      "{\"samples\": ", kSamplesPerRankEpoch, ", \"seconds\": ", seconds,
      ", \"throughput\": ", speed, ", \"train_loss\": 0.5",
      ", \"compute_seconds\": ", seconds * 0.7,
      ", \"input_wait_seconds\": ", seconds * 0.2,
      ", \"comm_wait_seconds\": ", seconds * 0.1);
  if (energy > 0) {
    absl::StrAppend(&value, ", \"energy_joules\": ", energy,
                    ", \"energy_source\": \"nvml\"");
  }
  return value + "}";
}

// Stores `plan` as the coordinator would have: the submission, each run's
// attempt with its nodes' inventory, every rank's events and exit, the
// score, then the run succeeded with its epochs. Returns the run ids.
std::vector<int64_t> StoreSubmission(Store& store, const Planned& plan) {
  const ConfigInfo* config = Registry::Builtin().FindConfig(kWorkload, kConfig);
  const int world = plan.nodes * plan.ranks_per_node;
  std::vector<v1::RunSpec> specs;
  for (size_t i = 0; i < plan.valid_flops.size(); ++i) {
    v1::RunSpec spec;
    spec.set_name(plan.name);
    spec.set_workload(kWorkload);
    spec.set_config(kConfig);
    spec.set_level(plan.level);
    spec.set_nodes(plan.nodes);
    spec.set_ranks_per_node(plan.ranks_per_node);
    spec.set_device(plan.device);
    spec.set_batch_size(64);
    spec.set_precision(plan.precision);
    spec.set_compression(plan.compression);
    spec.set_seed(static_cast<int64_t>(i + 1));
    spec.set_system(plan.system);
    spec.set_epochs(kEpochs);
    spec.set_repetitions(static_cast<int32_t>(plan.valid_flops.size()));
    spec.set_ranked(plan.ranked);
    spec.set_sweep(plan.sweep);
    spec.set_scaling(plan.scaling);
    specs.push_back(spec);
  }
  const int64_t created = kStart + plan.day * kDay;
  absl::StatusOr<v1::SubmitResponse> submitted =
      CreateSubmission(store, absl::StrCat("name: ", plan.name, "\n"), specs,
                       created, plan.user);
  EXPECT_TRUE(submitted.ok()) << submitted.status();
  if (!submitted.ok()) return {};
  std::vector<int64_t> ids(submitted->run_ids().begin(),
                           submitted->run_ids().end());
  for (size_t i = 0; i < ids.size(); ++i) {
    const int64_t id = ids[i];
    v1::Attempt attempt;
    attempt.set_number(1);
    attempt.set_state("succeeded");
    attempt.set_started_ms(created + 1000);
    attempt.set_finished_ms(created + 1000 + 70'000);
    for (int n = 0; n < plan.nodes; ++n) {
      const std::string node = absl::StrCat(plan.system, "-n", n);
      attempt.add_nodes(node);
      v1::Inventory& inventory = (*attempt.mutable_inventory())[node];
      inventory.set_cpu_model("AMD EPYC 9654 96-Core Processor");
      inventory.set_cpu_cores(192);
      inventory.set_memory_bytes(int64_t{1536} << 30);
      if (plan.device == "cuda") {
        inventory.set_driver_version("560.35.03");
        for (int d = 0; d < plan.ranks_per_node; ++d) {
          v1::Device* device = inventory.add_devices();
          device->set_index(d);
          device->set_kind("cuda");
          device->set_model(plan.device_model);
          device->set_memory_bytes(int64_t{141} << 30);
        }
      }
      auto& versions = *inventory.mutable_versions();
      versions["hpcai500"] = "0.1.0";
      versions["nccl"] = "2.21.5";
      versions["kernel"] = "6.1.0-28-amd64";
    }
    EXPECT_TRUE(store.SaveAttempt(id, attempt).ok());

    std::vector<EventRow> rows;
    std::vector<EventLine> parsed;
    std::map<int, int64_t> seq;
    auto add = [&](const std::string& key, const std::string& value, int rank,
                   int epoch, int64_t time_ms) {
      const std::string line =
          MllogLine(key, value, rank, ++seq[rank], epoch, time_ms);
      rows.push_back(EventRow{id, 1, rank, seq[rank], line, ""});
      parsed.push_back(*ParseEventLine(line));
    };
    for (int epoch = 1; epoch <= kEpochs; ++epoch) {
      const int64_t at = created + 1000 + epoch * 30'000;
      for (int rank = 0; rank < world; ++rank) {
        const double speed = rank < static_cast<int>(plan.rank_speeds.size())
                                 ? plan.rank_speeds[rank]
                                 : 100.0;
        add("hpcai500_epoch_stats",
            EpochStatsValue(speed, plan.energy_joules / kEpochs / world), rank,
            epoch, at);
        add("eval_accuracy",
            absl::StrCat(plan.quality * (epoch == kEpochs ? 1 : 0.8)), rank,
            epoch, at + 500);
      }
    }
    absl::StatusOr<std::vector<EventDisposition>> stored =
        store.InsertEvents(rows);
    EXPECT_TRUE(stored.ok()) << stored.status();
    for (int rank = 0; rank < world; ++rank) {
      v1::WorkerExited exit;
      exit.mutable_key()->set_run_id(id);
      exit.mutable_key()->set_attempt(1);
      exit.set_rank(rank);
      exit.set_exit_code(0);
      exit.set_stderr_tail(absl::StrCat("rank ", rank, ": trained\n"));
      EXPECT_TRUE(store.SaveExit(exit).ok());
    }

    const double vflops = plan.valid_flops[i];
    v1::Score score;
    score.set_quality(plan.quality);
    score.set_target(config->target);
    score.set_exponent(5);
    score.set_samples(kSamplesPerRankEpoch * world * kEpochs);
    score.set_train_seconds(plan.train_seconds);
    score.set_eval_seconds(2);
    score.set_flops(vflops * plan.flops_factor);
    score.set_valid_flops(vflops);
    score.set_reached_target(plan.quality >= config->target);
    score.set_convention(kFlopConvention);
    if (plan.energy_joules > 0) {
      score.set_energy_joules(plan.energy_joules);
      score.set_valid_flops_per_watt(vflops /
                                     (plan.energy_joules / plan.train_seconds));
    }
    EXPECT_TRUE(store.SaveResult(id, score).ok());
    v1::Run run = *store.GetRun(id);
    run.set_state(v1::RUN_STATE_SUCCEEDED);
    run.set_started_ms(created + 1000);
    run.set_finished_ms(created + 1000 + 70'000);
    for (v1::EpochSummary& epoch : SummarizeEpochs(parsed)) {
      *run.add_epochs() = std::move(epoch);
    }
    EXPECT_TRUE(store.UpdateRun(run).ok());
  }
  return ids;
}

// What the browser script is told about the stored runs.
struct Seeded {
  int64_t straggler_run = 0;
  std::string scaling_system;
  std::string scaling_sweep;
  std::string history_name;
};

Seeded SeedStore(const std::string& db) {
  Seeded seeded;
  absl::StatusOr<std::unique_ptr<Store>> opened = Store::Open(db);
  EXPECT_TRUE(opened.ok()) << opened.status();
  if (!opened.ok()) return seeded;
  Store& store = **opened;
  // Ranked by Valid FLOPS: delta 9e12 (system), alpha 6e12 (hardware, 3
  // repetitions), gamma 4e12 (free), beta 3e12 (hardware); FLOPS orders
  // them otherwise (beta's factor is large). Epsilon is unranked.
  Planned alpha = Plan("alpha-bf16", "alpha", {5e12, 6e12, 7e12}, 1);
  alpha.level = "hardware";
  alpha.train_seconds = 80;
  alpha.energy_joules = 48000;
  StoreSubmission(store, alpha);

  Planned delta = Plan("delta-4x", "delta", {9e12}, 2);
  delta.ranks_per_node = 4;
  delta.device_model = "AMD Instinct MI300X";
  delta.precision = "fp16";
  delta.compression = "fp16";
  delta.user = "bo";
  delta.train_seconds = 40;
  delta.energy_joules = 30000;
  delta.rank_speeds = {200, 205, 198, 120};  // rank 3 straggles
  seeded.straggler_run = StoreSubmission(store, delta).front();

  Planned gamma = Plan("gamma-free", "gamma", {4e12}, 3);
  gamma.level = "free";
  gamma.device = "cpu";
  gamma.precision = "fp32";
  gamma.user = "cy";
  gamma.train_seconds = 300;
  StoreSubmission(store, gamma);

  Planned beta = Plan("beta-fast", "beta", {3e12}, 4);
  beta.level = "hardware";
  beta.ranks_per_node = 8;
  beta.flops_factor = 10;
  beta.train_seconds = 20;
  StoreSubmission(store, beta);

  Planned epsilon = Plan("epsilon-short", "epsilon", {20e12}, 5);
  epsilon.ranked = false;
  StoreSubmission(store, epsilon);

  // alpha at 1, 2 (above), 4 and 8 devices: the scaling page.
  seeded.scaling_system = "alpha";
  for (int devices : {1, 4, 8}) {
    Planned more =
        Plan("alpha-bf16", "alpha",
             {3e12 * devices * (devices == 8 ? 0.8 : 0.95)}, 6 + devices);
    more.level = "hardware";
    more.nodes = devices == 8 ? 2 : 1;
    more.ranks_per_node = devices == 8 ? 4 : devices;
    StoreSubmission(store, more);
  }
  // And a strong-scaling sweep of alpha (as `hpcai500 sweep` marks its
  // runs): fp32 at 1, 2 and 4 nodes, bf16 with PowerSGD at 2 and 4, each
  // configuration its own series beside the bf16 runs above.
  seeded.scaling_sweep = "alpha-20261205-040000-ab12";
  for (const auto& [precision, compression, devices, valid_flops] :
       std::vector<std::tuple<std::string, std::string, int, double>>{
           {"fp32", "none", 1, 1e12},
           {"fp32", "none", 2, 1.9e12},
           {"fp32", "none", 4, 3.6e12},
           {"bf16", "powersgd", 2, 4e12},
           {"bf16", "powersgd", 4, 7.6e12}}) {
    Planned point = Plan(
        absl::StrCat("alpha-", devices, "n1r-", precision, "-", compression),
        "alpha", {valid_flops}, 12 + devices);
    point.precision = precision;
    point.compression = compression;
    point.nodes = devices;
    point.ranks_per_node = 1;
    point.ranked = false;  // a smoke budget, as sweeps of small configs are
    point.sweep = seeded.scaling_sweep;
    point.scaling = "strong";
    StoreSubmission(store, point);
  }

  // A nightly spec over eight days, the seventh run a regression.
  seeded.history_name = "nightly-smoke";
  const std::vector<double> nightly = {1.00e12, 1.02e12, 0.98e12, 1.01e12,
                                       0.99e12, 1.00e12, 0.60e12, 1.01e12};
  for (size_t day = 0; day < nightly.size(); ++day) {
    Planned run = Plan(seeded.history_name, "ci-box", {nightly[day]},
                       20 + static_cast<int64_t>(day));
    run.ranked = false;
    run.user = "ci";
    StoreSubmission(store, run);
  }
  return seeded;
}

TEST(PagesInChromium, LeaderboardRunLiveScalingHistoryAndPhone) {
  if (access(kChromium, X_OK) != 0) {
    GTEST_SKIP() << kChromium << " is not installed (scripts/install-deps.sh "
                 << "installs the chromium package)";
  }
  if (const std::string why = WhyNoPlaywright(); !why.empty()) {
    GTEST_SKIP() << why;
  }
  TestCluster cluster;
  const Seeded seeded = SeedStore(cluster.db_path());
  ASSERT_FALSE(HasFailure()) << "seeding the store failed";
  ASSERT_TRUE(cluster.StartCoordinator());
  ASSERT_TRUE(cluster.StartAgent("node-a", 2));

  // The live run: real training on the agent, watched by the run page.
  const std::string spec = cluster.WriteSpec(
      "live",
      "name: browser-live\nworkload: image_classification\n"
      "config: fashion_mnist_smoke\nlevel: system\nnodes: 1\n"
      "ranks_per_node: 2\ndevice: cpu\nbatch_size: 64\nprecision: fp32\n"
      "seed: 5\nsystem: browser-cpu\n");
  CommandResult submit = cluster.Cli({"submit", spec});
  ASSERT_EQ(submit.exit_code, 0) << submit.out << submit.err;
  const std::string live_run = submit.out.substr(0, submit.out.find('\n'));

  const std::string artifacts =
      std::string(HPCAI500_BINARY_DIR) + "/test-artifacts/pages";
  std::filesystem::create_directories(artifacts);
  CommandResult browser = RunCommand(
      {"/usr/bin/env",
       "HPCAI500_URL=http://127.0.0.1:" + std::to_string(cluster.http_port()),
       "HPCAI500_LIVE_RUN=" + live_run,
       "HPCAI500_STRAGGLER_RUN=" + std::to_string(seeded.straggler_run),
       "HPCAI500_SCALING_SYSTEM=" + seeded.scaling_system,
       "HPCAI500_SCALING_SWEEP=" + seeded.scaling_sweep,
       "HPCAI500_HISTORY_NAME=" + seeded.history_name,
       "HPCAI500_SCREENSHOTS=" + artifacts,
       std::string("HPCAI500_CHROMIUM=") + kChromium, kPython,
       std::string(HPCAI500_SOURCE_DIR) + "/tests/web/pages_browser.py"},
      seconds(240));
  EXPECT_EQ(browser.exit_code, 0) << browser.out << browser.err;
  std::cout << browser.out;
  if (HasFailure()) cluster.KeepFiles();
}

}  // namespace
}  // namespace hpcai500::testing
