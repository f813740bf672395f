// `hpcai500-worker preflight`: the node's bounded measurement (preflight.h).
#include "worker/preflight.h"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <iostream>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <vector>

#include "common/event_keys.h"
#include "common/numbers.h"
#include "common/vocabulary.h"
#include "worker/distributed/distributed.h"
#include "worker/events/event_log.h"
#include "worker/flags.h"
#include "worker/test_slowdown.h"

namespace hpcai500::worker {
namespace {

namespace keys = event_keys;

struct PreflightOptions {
  Device device = Device::kCpu;
  Precision precision = Precision::kFp32;
  int64_t budget_ms = 4'000;
  int64_t threads = 0;  // 0: LibTorch's default
};

constexpr char kUsage[] =
    "usage: hpcai500-worker preflight [--device cpu|cuda] [--precision "
    "fp32|bf16|fp16] [--budget-ms N] [--threads N]\n"
    "prints one hpcai500_preflight event line: gemm_gflops, memory_gbps, "
    "h2d_gbps (cuda), allreduce_busbw_gbps\n"
    "exit codes: 0 measured, 1 a measurement failed, 2 bad command line or "
    "device";

// The sizes measured: small enough for a laptop's CPU to repeat within a
// second, large enough for a GPU to leave its caches and launch costs.
struct Sizes {
  int64_t gemm_n;
  int64_t copy_bytes;
  int64_t allreduce_bytes;
};
constexpr Sizes kCpuSizes{512, 64 << 20, 8 << 20};
constexpr Sizes kCudaSizes{8192, 1LL << 30, 256 << 20};

// Times `body` repeatedly for about `budget` (at least kMinReps times, at
// most kMaxReps), after one unmeasured warm-up; returns the median seconds.
// `sync` waits for the device; `slow_pct` stretches each repetition as the
// test slowdown stretches a training step.
constexpr int kMinReps = 3;
constexpr int kMaxReps = 200;
double MedianSeconds(const std::function<void()>& body,
                     const std::function<void()>& sync, double budget,
                     int slow_pct) {
  using Clock = std::chrono::steady_clock;
  body();
  sync();
  std::vector<double> seconds;
  const auto start = Clock::now();
  while (static_cast<int>(seconds.size()) < kMaxReps) {
    const auto rep_start = Clock::now();
    body();
    sync();
    const double took =
        std::chrono::duration<double>(Clock::now() - rep_start).count();
    if (slow_pct > 0) {
      std::this_thread::sleep_for(
          std::chrono::duration<double>(took * slow_pct / 100.0));
    }
    seconds.push_back(took * (1 + slow_pct / 100.0));
    const double spent =
        std::chrono::duration<double>(Clock::now() - start).count();
    if (static_cast<int>(seconds.size()) >= kMinReps && spent >= budget) break;
  }
  std::nth_element(seconds.begin(), seconds.begin() + seconds.size() / 2,
                   seconds.end());
  return seconds[seconds.size() / 2];
}

torch::ScalarType DtypeOf(Precision p) {
  switch (p) {
    case Precision::kBf16:
      return torch::kBFloat16;
    case Precision::kFp16:
      return torch::kHalf;
    case Precision::kFp32:
      break;
  }
  return torch::kFloat32;
}

class Measurement {
 public:
  Measurement(const PreflightOptions& o, const torch::Device& device,
              int slow_pct, double budget_each)
      : o_(o),
        device_(device),
        sizes_(device.is_cuda() ? kCudaSizes : kCpuSizes),
        slow_pct_(slow_pct),
        budget_each_(budget_each) {}

  double GemmGflops() {
    const auto options =
        torch::TensorOptions(device_).dtype(DtypeOf(o_.precision));
    const torch::Tensor a =
        torch::randn({sizes_.gemm_n, sizes_.gemm_n}, options);
    const torch::Tensor b =
        torch::randn({sizes_.gemm_n, sizes_.gemm_n}, options);
    torch::Tensor c = torch::empty({sizes_.gemm_n, sizes_.gemm_n}, options);
    const double s = Time([&] { torch::mm_out(c, a, b); });
    const double n = static_cast<double>(sizes_.gemm_n);
    return 2 * n * n * n / s / 1e9;
  }

  double MemoryGbps() {
    const int64_t floats = sizes_.copy_bytes / 4;
    const torch::Tensor src =
        torch::rand({floats}, torch::TensorOptions(device_));
    torch::Tensor dst = torch::empty_like(src);
    const double s = Time([&] { dst.copy_(src); });
    return 2.0 * sizes_.copy_bytes / s / 1e9;  // read + write
  }

  double HostToDeviceGbps() {
    const int64_t floats = sizes_.copy_bytes / 4;
    const torch::Tensor host = torch::rand({floats}).pin_memory();
    torch::Tensor on_device =
        torch::empty({floats}, torch::TensorOptions(device_));
    const double s =
        Time([&] { on_device.copy_(host, /*non_blocking=*/true); });
    return static_cast<double>(sizes_.copy_bytes) / s / 1e9;
  }

  // Two members of one group as threads of this process (one LibTorch
  // flight recorder per process cannot take two groups racing: it is off,
  // as in the worker's own threaded tests).
  double AllReduceBusGbps() {
    constexpr int kWorld = 2;
    setenv("TORCH_FR_BUFFER_SIZE", "0", /*overwrite=*/1);
    const bool nccl = device_.is_cuda() && torch::cuda::device_count() >= 2;
    auto store = c10::make_intrusive<c10d::HashStore>();
    std::mutex mu;
    std::exception_ptr failure;
    double seconds = 0;
    std::vector<std::thread> members;
    for (int rank = 0; rank < kWorld; ++rank) {
      members.emplace_back([&, rank] {
        try {
          const torch::Device device = nccl ? torch::Device(torch::kCUDA, rank)
                                            : torch::Device(torch::kCPU);
          Collectives group(store, rank, kWorld, std::chrono::seconds(60),
                            nccl ? DistBackend::kNccl : DistBackend::kGloo,
                            device);
          torch::Tensor t = torch::ones({sizes_.allreduce_bytes / 4},
                                        torch::TensorOptions(device));
          // A fixed count keeps both members in step; 20 of 8 MiB take
          // under a second on a laptop's loopback.
          constexpr int kReps = 20;
          const auto sync = [&] {
            if (device.is_cuda()) torch::cuda::synchronize(device.index());
          };
          group.AllReduceSum(t);
          sync();
          std::vector<double> each;
          for (int i = 0; i < kReps; ++i) {
            const auto start = std::chrono::steady_clock::now();
            group.AllReduceSum(t);
            sync();
            each.push_back(std::chrono::duration<double>(
                               std::chrono::steady_clock::now() - start)
                               .count());
          }
          if (rank == 0) {
            std::sort(each.begin(), each.end());
            std::lock_guard<std::mutex> lock(mu);
            seconds = each[each.size() / 2];
          }
        } catch (...) {
          std::lock_guard<std::mutex> lock(mu);
          if (!failure) failure = std::current_exception();
        }
      });
    }
    for (std::thread& m : members) m.join();
    if (failure) std::rethrow_exception(failure);
    if (slow_pct_ > 0) seconds *= 1 + slow_pct_ / 100.0;
    const double bus_bytes =
        static_cast<double>(sizes_.allreduce_bytes) * 2 * (kWorld - 1) / kWorld;
    return bus_bytes / seconds / 1e9;
  }

 private:
  double Time(const std::function<void()>& body) {
    return MedianSeconds(
        body,
        [this] {
          if (device_.is_cuda()) torch::cuda::synchronize(device_.index());
        },
        budget_each_, slow_pct_);
  }

  const PreflightOptions o_;
  const torch::Device device_;
  const Sizes sizes_;
  const int slow_pct_;
  const double budget_each_;
};

// Parses argv into *o; nullopt to go on, else the exit code (--help, or a
// usage error printed).
std::optional<int> ParsePreflightFlags(int argc, char** argv,
                                       PreflightOptions* o) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i], value;
    if (arg == "--help" || arg == "-h") {
      std::cout << kUsage << "\n";
      return 0;
    }
    if (!TakeFlagAndValue(argc, argv, &i, &arg, &value)) {
      std::cerr << "preflight: " << arg << " needs a value\n" << kUsage << "\n";
      return 2;
    }
    std::string error;
    bool ok = true;
    if (arg == "--device") {
      const std::optional<Device> d = Parse<Device>(value);
      ok = d.has_value();
      if (ok) o->device = *d;
      error = "--device: '" + value + "' is not " + NamesInProse<Device>();
    } else if (arg == "--precision") {
      const std::optional<Precision> p = Parse<Precision>(value);
      ok = p.has_value();
      if (ok) o->precision = *p;
      error =
          "--precision: '" + value + "' is not " + NamesInProse<Precision>();
    } else if (arg == "--budget-ms") {
      ok = ReadInt("--budget-ms", value, 100, 60'000, &o->budget_ms, &error);
    } else if (arg == "--threads") {
      ok = ReadInt("--threads", value, 0, 1'024, &o->threads, &error);
    } else {
      ok = false;
      error = "unknown flag " + arg;
    }
    if (!ok) {
      std::cerr << "preflight: " << error << "\n" << kUsage << "\n";
      return 2;
    }
  }
  return std::nullopt;
}

}  // namespace

int PreflightMain(int argc, char** argv) {
  PreflightOptions o;
  if (std::optional<int> done = ParsePreflightFlags(argc, argv, &o)) {
    return *done;
  }
  if (o.device == Device::kCuda && !torch::cuda::is_available()) {
    std::cerr << "preflight: --device cuda, but no GPU is usable here\n";
    return 2;
  }
  try {
    if (o.threads > 0) torch::set_num_threads(static_cast<int>(o.threads));
    const int slow_pct = TestStepSlowdownPct(ProcessEnv());
    const torch::Device device = o.device == Device::kCuda
                                     ? torch::Device(torch::kCUDA, 0)
                                     : torch::Device(torch::kCPU);
    const int figures = device.is_cuda() ? 4 : 3;
    // LibTorch's start and the group's set-up come on top of the budget;
    // the all-reduce repeats a fixed count, so it takes no share.
    const double budget_each = o.budget_ms / 1000.0 / figures;
    const auto start = std::chrono::steady_clock::now();
    Measurement m(o, device, slow_pct, budget_each);
    JsonMembers value = {
        {keys::kPreflightGemmGflops, JsonDouble(m.GemmGflops())},
        {keys::kPreflightMemoryGbps, JsonDouble(m.MemoryGbps())}};
    if (device.is_cuda()) {
      value.push_back(
          {keys::kPreflightHostToDeviceGbps, JsonDouble(m.HostToDeviceGbps())});
    }
    value.push_back(
        {keys::kPreflightAllReduceGbps, JsonDouble(m.AllReduceBusGbps())});
    value.push_back({keys::kPreflightSeconds,
                     JsonDouble(std::chrono::duration<double>(
                                    std::chrono::steady_clock::now() - start)
                                    .count())});
    std::string error;
    std::unique_ptr<EventLog> log =
        EventLog::Open("", /*rank=*/0, stdout, EventLog::SystemClockMs, &error);
    if (!log) {
      std::cerr << "preflight: " << error << "\n";
      return 1;
    }
    log->Emit(EventType::kPointInTime, keys::kPreflight, JsonObject(value),
              {{keys::kMetaDevice, JsonString(device.str())}});
    std::fflush(stdout);
    return 0;
  } catch (const std::invalid_argument& e) {
    std::cerr << "preflight: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "preflight: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace hpcai500::worker
