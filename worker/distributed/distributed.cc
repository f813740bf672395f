#include "worker/distributed/distributed.h"

#include <torch/csrc/autograd/utils/lambda_post_hook.h>
#include <torch/version.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#ifdef USE_C10D_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include "common/stop_threads.h"

namespace hpcai500::worker {

namespace {

constexpr bool kHasNccl =
#ifdef USE_C10D_NCCL
    true;
#else
    false;
#endif

// Gloo reduces bfloat16 from LibTorch 2.2 on.
constexpr bool kGlooHasBFloat16 = TORCH_VERSION_MAJOR > 2 ||
                                  (TORCH_VERSION_MAJOR == 2 &&
                                   TORCH_VERSION_MINOR >= 2);

const char kBf16Refusal[] =
    "--compression bf16 needs NCCL or LibTorch >= 2.2 for Gloo (this is "
    "LibTorch " TORCH_VERSION "); use --compression fp16";

// run.cc refuses the flags first, saying why (cuda_graph_step.h).
const char kPowerSgdCaptureRefusal[] =
    "a capturable gradient reducer cannot compress with PowerSGD";

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

// All ranks on this node: loopback. Otherwise GLOO_SOCKET_IFNAME names the
// interface, or the address the hostname resolves to.
std::shared_ptr<::gloo::transport::Device> GlooDevice(bool loopback) {
  if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME")) {
    return c10d::ProcessGroupGloo::createDeviceForInterface(ifname);
  }
  if (loopback) {
    return c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1");
  }
  return c10d::ProcessGroupGloo::createDefaultDevice();
}

// Makes the columns of `p` ([rows, r]) orthonormal in place (Gram-Schmidt);
// the same input gives the same bits on every rank.
void Orthogonalize(torch::Tensor& p) {
  const int64_t r = p.size(1);
  for (int64_t i = 0; i < r; ++i) {
    torch::Tensor col = p.select(1, i);
    col.div_(col.norm().add_(1e-8));
    if (i + 1 < r) {
      torch::Tensor rest = p.slice(1, i + 1, r);
      // rest -= col (col^T rest)
      rest.sub_(col.unsqueeze(1).mm(col.unsqueeze(0).mm(rest)));
    }
  }
}

}  // namespace

std::string CheckCommunication(const WorkerOptions& options) {
  const bool nccl = *options.args.dist_backend == DistBackend::kNccl;
  if (nccl && *options.args.device != Device::kCuda) {
    return "--dist-backend nccl needs --device cuda (NCCL carries CUDA "
           "tensors only); use --dist-backend gloo on the CPU";
  }
  if (nccl && options.world_size > 1 && !kHasNccl) {
    return "--dist-backend nccl with " + std::to_string(options.world_size) +
           " ranks needs a LibTorch built with NCCL; this one (" +
           TORCH_VERSION + ") has only Gloo: use --dist-backend gloo";
  }
  if (*options.args.compression == Compression::kBf16 && !nccl &&
      !kGlooHasBFloat16) {
    return kBf16Refusal;
  }
  return "";
}

// ---- Collectives ----------------------------------------------------------

Collectives::Collectives(const WorkerOptions& o, const torch::Device& device)
    : rank_(o.rank),
      world_size_(o.world_size),
      timeout_(std::chrono::seconds(*o.args.collective_timeout_seconds)),
      backend_(*o.args.dist_backend),
      device_(device) {
  if (world_size_ == 1) return;
  c10d::TCPStoreOptions store_options;
  store_options.port = static_cast<uint16_t>(o.master_port);
  store_options.isServer = o.rank == 0;
  store_options.numWorkers = static_cast<size_t>(o.world_size);
  store_options.waitWorkers = true;
  store_options.timeout = timeout_;
  auto tcp_store =
      c10::make_intrusive<c10d::TCPStore>(o.master_addr, store_options);
  Init(tcp_store, /*loopback=*/o.local_world_size == o.world_size);
}

Collectives::Collectives(c10::intrusive_ptr<c10d::Store> store, int rank,
                         int world_size, std::chrono::milliseconds timeout,
                         DistBackend backend, const torch::Device& device)
    : rank_(rank),
      world_size_(world_size),
      timeout_(timeout),
      backend_(backend),
      device_(device) {
  if (world_size_ == 1) return;
  Init(std::move(store), /*loopback=*/true);
}

Collectives::~Collectives() {
  if (group_) group_->shutdown();
}

void Collectives::Init(c10::intrusive_ptr<c10d::Store> store, bool loopback) {
  auto prefixed = c10::make_intrusive<c10d::PrefixStore>("hpcai500", store);
  if (backend_ == DistBackend::kNccl) {
#ifdef USE_C10D_NCCL
    auto options = c10d::ProcessGroupNCCL::Options::create();
    options->timeout = timeout_;
    auto nccl = c10::make_intrusive<c10d::ProcessGroupNCCL>(
        prefixed, rank_, world_size_, options);
    // Bound to the rank's GPU, as init_process_group(device_id=...) binds
    // it: its communicator is made there (not on the current device at its
    // first collective), and on a node where each rank sees every GPU no
    // two ranks' communicators share one.
    if (device_.is_cuda()) {
      nccl->setBoundDeviceId(device_);
      nccl->eagerConnectSingleDevice(device_);
    }
    group_ = std::move(nccl);
    return;
#else
    throw std::invalid_argument(
        "--dist-backend nccl needs a LibTorch built with NCCL");
#endif
  }
  auto options = c10d::ProcessGroupGloo::Options::create(timeout_);
  options->devices.push_back(GlooDevice(loopback));
  group_ = c10::make_intrusive<c10d::ProcessGroupGloo>(prefixed, rank_,
                                                       world_size_, options);
}

bool Collectives::SupportsBFloat16() const {
  return backend_ == DistBackend::kNccl || kGlooHasBFloat16;
}

torch::Tensor Collectives::OnWire(const torch::Tensor& t) const {
  return backend_ == DistBackend::kNccl && !t.is_cuda() ? t.to(device_) : t;
}

void Collectives::AllReduceSum(torch::Tensor& t) {
  if (!group_) return;
  std::vector<torch::Tensor> tensors = {OnWire(t)};
  group_->allreduce(tensors)->wait(timeout_);
  if (!tensors[0].is_same(t)) t.copy_(tensors[0]);
}

c10::intrusive_ptr<c10d::Work> Collectives::AllReduceSumAsync(
    torch::Tensor& t) {
  if (!group_) return {};
  if (backend_ == DistBackend::kNccl && !t.is_cuda()) {
    throw std::invalid_argument(
        "an asynchronous NCCL all-reduce needs a CUDA tensor");
  }
  std::vector<torch::Tensor> tensors = {t};
  return group_->allreduce(tensors);
}

void Collectives::BroadcastFromRank0(torch::Tensor& t) {
  if (!group_) return;
  std::vector<torch::Tensor> tensors = {OnWire(t)};
  c10d::BroadcastOptions options;
  options.rootRank = 0;
  group_->broadcast(tensors, options)->wait(timeout_);
  if (!tensors[0].is_same(t)) t.copy_(tensors[0]);
}

// ---- GradientReducer ------------------------------------------------------

GradientReducer::GradientReducer(Collectives* collectives,
                                 std::vector<torch::Tensor> params,
                                 const ReducerOptions& options)
    : collectives_(collectives),
      params_(std::move(params)),
      options_(options),
      active_(collectives->world_size() > 1) {
  CheckOptions();
  AssignBuckets();
  if (options_.compression == Compression::kPowerSgd) InitPowerSgd();
  if (active_) InstallHooks();
}

void GradientReducer::CheckOptions() const {
  if (options_.compression == Compression::kBf16 &&
      !collectives_->SupportsBFloat16()) {
    throw std::invalid_argument(kBf16Refusal);
  }
  if (options_.powersgd_rank < 1) {
    throw std::invalid_argument("--powersgd-rank must be at least 1");
  }
  if (!(options_.bucket_mb > 0)) {
    throw std::invalid_argument("--bucket-mb must be positive");
  }
  if (options_.capturable && options_.compression == Compression::kPowerSgd) {
    throw std::invalid_argument(kPowerSgdCaptureRefusal);
  }
}

void GradientReducer::AssignBuckets() {
  // Buckets in reverse parameter order, the order backward produces them.
  const double limit_bytes = options_.bucket_mb * 1024 * 1024;
  bucket_of_.assign(params_.size(), 0);
  std::vector<size_t> current;
  double current_bytes = 0;
  for (size_t k = params_.size(); k-- > 0;) {
    current.push_back(k);
    current_bytes += static_cast<double>(params_[k].numel()) * 4;
    if (current_bytes >= limit_bytes) {
      buckets_.push_back(std::move(current));
      current.clear();
      current_bytes = 0;
    }
  }
  if (!current.empty()) buckets_.push_back(std::move(current));
  state_.resize(buckets_.size());
  for (size_t b = 0; b < buckets_.size(); ++b) {
    for (size_t k : buckets_[b]) {
      bucket_of_[k] = b;
      state_[b].params.push_back(k);
      state_[b].numel += params_[k].numel();
    }
  }
  grad_ready_.assign(params_.size(), false);
}

void GradientReducer::InitPowerSgd() {
  const int64_t r = options_.powersgd_rank;
  powersgd_.resize(params_.size());
  for (size_t k = 0; k < params_.size(); ++k) {
    const torch::Tensor& p = params_[k];
    PowerSgdMatrix& m = powersgd_[k];
    if (p.dim() < 2) continue;
    m.rows = p.size(0);
    m.cols = p.numel() / m.rows;
    if (r * (m.rows + m.cols) >= m.rows * m.cols) continue;
    m.compressed = true;
    auto generator = at::detail::createCPUGenerator(options_.powersgd_seed + k);
    m.q = at::randn({m.cols, r}, generator, torch::kFloat32).to(p.device());
    m.error = torch::zeros(
        {m.rows, m.cols},
        torch::TensorOptions().dtype(torch::kFloat32).device(p.device()));
  }
}

void GradientReducer::InstallHooks() {
  for (size_t k = 0; k < params_.size(); ++k) {
    if (!params_[k].requires_grad()) continue;
    AccumulatorPtr accumulator =
        torch::autograd::impl::grad_accumulator(params_[k]);
    hook_keys_.push_back(accumulator->add_post_hook(
        std::make_unique<torch::autograd::utils::LambdaPostHook>(
            [this, k](const torch::autograd::variable_list& outputs,
                      const torch::autograd::variable_list&) {
              OnGradReady(k);
              return outputs;
            })));
    accumulators_.push_back(std::move(accumulator));
  }
}

GradientReducer::~GradientReducer() {
  for (size_t i = 0; i < accumulators_.size(); ++i) {
    accumulators_[i]->del_post_hook(hook_keys_[i]);
  }
}

void GradientReducer::BeginStep(int64_t local_samples,
                                std::optional<int64_t> global_samples) {
  if (!active_) return;
  std::lock_guard<std::mutex> lock(mu_);
  for (Bucket& b : state_) {
    b.ready = 0;
    b.launched = false;
    b.wire = torch::Tensor();
    b.work.reset();
  }
  std::fill(grad_ready_.begin(), grad_ready_.end(), false);
  next_launch_ = 0;
  // Agree on the global sample count first, so buckets can be scaled by
  // local / global as they launch.
  double global = 0;
  if (global_samples) {
    global = static_cast<double>(*global_samples);
  } else {
    torch::Tensor count =
        torch::tensor({static_cast<double>(local_samples)}, torch::kFloat64);
    const auto start = std::chrono::steady_clock::now();
    collectives_->AllReduceSum(count);
    stats_.wait_seconds += SecondsSince(start);
    stats_.bytes += count.numel() * count.element_size();
    global = count.item<double>();
  }
  scale_ = global > 0 ? static_cast<double>(local_samples) / global : 0.0;
  compressing_ = !powersgd_.empty() && steps_ >= options_.powersgd_warmup_steps;
  in_step_ = true;
}

void GradientReducer::OnGradReady(size_t param) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!in_step_ || grad_ready_[param]) return;
  grad_ready_[param] = true;
  ++state_[bucket_of_[param]].ready;
  const int64_t before = stats_.buckets;
  LaunchReadyBuckets();
  stats_.buckets_early += stats_.buckets - before;
}

void GradientReducer::LaunchReadyBuckets() {
  while (next_launch_ < state_.size() &&
         state_[next_launch_].ready == state_[next_launch_].params.size()) {
    Launch(next_launch_++);
  }
}

torch::Tensor GradientReducer::LocalGrad(size_t param) const {
  const torch::Tensor& p = params_[param];
  const torch::Tensor& g = p.grad();
  if (!g.defined()) {
    return torch::zeros(
        {p.numel()},
        torch::TensorOptions().dtype(torch::kFloat32).device(p.device()));
  }
  return g.detach().reshape(-1).to(torch::kFloat32).mul(scale_);
}

void GradientReducer::Launch(size_t index) {
  torch::NoGradGuard no_grad;
  Bucket& b = state_[index];
  std::vector<torch::Tensor> pieces;
  for (size_t k : b.params) {
    torch::Tensor g = LocalGrad(k);
    if (compressing_ && powersgd_[k].compressed) {
      PowerSgdMatrix& m = powersgd_[k];
      m.m = g.view({m.rows, m.cols}).add(m.error);
      m.p = m.m.mm(m.q);
      pieces.push_back(m.p.reshape(-1));
    } else {
      pieces.push_back(g);
    }
  }
  torch::Tensor flat = torch::cat(pieces);
  if (options_.compression == Compression::kFp16) {
    flat = flat.to(torch::kHalf);
  } else if (options_.compression == Compression::kBf16) {
    flat = flat.to(torch::kBFloat16);
  }
  b.wire = flat;
  b.launched = true;
  stats_.bytes += flat.numel() * flat.element_size();
  ++stats_.buckets;
  b.work = collectives_->AllReduceSumAsync(b.wire);
}

void GradientReducer::WriteBack(size_t param, const torch::Tensor& mean) {
  torch::NoGradGuard no_grad;
  const torch::Tensor& p = params_[param];
  torch::Tensor value = mean.view(p.sizes()).to(p.scalar_type());
  if (p.grad().defined()) {
    p.grad().copy_(value);
  } else {
    // Its own storage, so zero_grad may clear it in place, in the
    // parameter's layout (channels-last), as autograd makes gradients: the
    // fused optimizer step walks both as flat memory.
    torch::Tensor handle = p;
    handle.mutable_grad() = torch::empty_like(p).copy_(value);
  }
}

void GradientReducer::FinishStep() {
  if (!active_) return;
  std::lock_guard<std::mutex> lock(mu_);
  in_step_ = false;
  // Buckets backward did not finish: unused parameters, or no backward at
  // all on a rank without samples. Launched in index order like the rest.
  while (next_launch_ < state_.size()) Launch(next_launch_++);

  const auto start = std::chrono::steady_clock::now();
  // NCCL: wait() only makes the current stream wait for the all-reduce's,
  // so the host goes on queueing the step (a wait with a timeout would spin
  // the host until the bucket is done; NCCL's own watchdog and the stall
  // watchdog end a collective that never finishes). Gloo's results are on
  // the host: wait for them, up to the timeout.
  const bool on_device =
      options_.capturable || collectives_->backend() == DistBackend::kNccl;
  for (Bucket& b : state_) {
    if (on_device) {
      b.work->wait();
    } else {
      b.work->wait(collectives_->timeout());
    }
  }
  stats_.wait_seconds += SecondsSince(start);

  ++steps_;
  if (compressing_) {
    FinishPowerSgd();
    return;
  }
  for (Bucket& b : state_) {
    torch::Tensor sum = b.wire.to(torch::kFloat32);
    int64_t offset = 0;
    for (size_t k : b.params) {
      const int64_t n = params_[k].numel();
      WriteBack(k, sum.slice(0, offset, offset + n));
      offset += n;
    }
  }
}

void GradientReducer::FinishPowerSgd() {
  torch::NoGradGuard no_grad;
  // Phase 2: orthonormal P (the same on every rank), Q = M^T P.
  std::vector<size_t> compressed;
  std::vector<torch::Tensor> local_q;
  for (Bucket& b : state_) {
    int64_t offset = 0;
    for (size_t k : b.params) {
      PowerSgdMatrix& m = powersgd_[k];
      if (!m.compressed) {
        const int64_t n = params_[k].numel();
        WriteBack(k, b.wire.slice(0, offset, offset + n));
        offset += n;
        continue;
      }
      const int64_t n = m.p.numel();
      m.p = b.wire.slice(0, offset, offset + n).view(m.p.sizes()).clone();
      offset += n;
      Orthogonalize(m.p);
      torch::Tensor q = m.m.t().mm(m.p);
      // Error feedback: what this rank's approximation P P^T M misses.
      m.error = m.m - m.p.mm(q.t());
      compressed.push_back(k);
      local_q.push_back(q.reshape(-1));
    }
  }
  if (compressed.empty()) return;
  torch::Tensor flat = torch::cat(local_q);
  stats_.bytes += flat.numel() * flat.element_size();
  const auto start = std::chrono::steady_clock::now();
  collectives_->AllReduceSum(flat);
  stats_.wait_seconds += SecondsSince(start);
  int64_t offset = 0;
  for (size_t k : compressed) {
    PowerSgdMatrix& m = powersgd_[k];
    const int64_t n = m.q.numel();
    m.q = flat.slice(0, offset, offset + n).view(m.q.sizes()).clone();
    offset += n;
    WriteBack(k, m.p.mm(m.q.t()).reshape(-1));
    m.m = torch::Tensor();
  }
}

CommStats GradientReducer::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void GradientReducer::CountReplayedStep(const CommStats& step) {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.bytes += step.bytes;
  stats_.buckets += step.buckets;
  stats_.buckets_early += step.buckets_early;
}

torch::Tensor GradientReducer::PowerSgdError(size_t i) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (powersgd_.empty() || !powersgd_[i].compressed) return {};
  return powersgd_[i].error.clone();
}

PowerSgdState GradientReducer::powersgd_state() const {
  std::lock_guard<std::mutex> lock(mu_);
  PowerSgdState state;
  state.steps = steps_;
  for (const PowerSgdMatrix& m : powersgd_) {
    state.q.push_back(m.compressed ? m.q.clone() : torch::Tensor());
    state.error.push_back(m.compressed ? m.error.clone() : torch::Tensor());
  }
  return state;
}

void GradientReducer::RestorePowerSgd(const PowerSgdState& state) {
  std::lock_guard<std::mutex> lock(mu_);
  if (state.q.size() != powersgd_.size() ||
      state.error.size() != powersgd_.size()) {
    throw std::invalid_argument(
        "PowerSGD state of " + std::to_string(state.q.size()) +
        " parameters for a reducer of " + std::to_string(powersgd_.size()));
  }
  for (size_t k = 0; k < powersgd_.size(); ++k) {
    const PowerSgdMatrix& m = powersgd_[k];
    const bool saved = state.q[k].defined() && state.error[k].defined();
    if (saved != m.compressed ||
        (saved && (state.q[k].sizes() != m.q.sizes() ||
                   state.error[k].sizes() != m.error.sizes()))) {
      throw std::invalid_argument("PowerSGD state of parameter " +
                                  std::to_string(k) +
                                  " does not match this reducer's");
    }
  }
  torch::NoGradGuard no_grad;
  for (size_t k = 0; k < powersgd_.size(); ++k) {
    PowerSgdMatrix& m = powersgd_[k];
    if (!m.compressed) continue;
    m.q.copy_(state.q[k]);
    m.error.copy_(state.error[k]);
  }
  steps_ = state.steps;
}

// ---- StallWatchdog --------------------------------------------------------

StallWatchdog::StallWatchdog(std::chrono::milliseconds timeout,
                             OnStall on_stall)
    : timeout_(timeout), on_stall_(std::move(on_stall)) {
  if (timeout_.count() > 0) thread_ = std::thread([this] { Loop(); });
}

StallWatchdog::~StallWatchdog() { StopAndJoin(mu_, stop_, cv_, thread_); }

void StallWatchdog::Loop() {
  using Clock = std::chrono::steady_clock;
  const auto poll = std::min<std::chrono::milliseconds>(
      std::chrono::milliseconds(200),
      timeout_ / 4 + std::chrono::milliseconds(1));
  uint64_t seen = beats_.load();
  Clock::time_point last_progress = Clock::now();
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    cv_.wait_for(lock, poll);
    if (stop_) return;
    const uint64_t now_beats = beats_.load();
    if (now_beats != seen) {
      seen = now_beats;
      last_progress = Clock::now();
      continue;
    }
    if (Clock::now() - last_progress < timeout_) continue;
    fired_ = true;
    char seconds[32];
    if (timeout_.count() % 1000 == 0) {
      std::snprintf(seconds, sizeof(seconds), "%lld",
                    static_cast<long long>(timeout_.count() / 1000));
    } else {
      std::snprintf(seconds, sizeof(seconds), "%g", timeout_.count() / 1000.0);
    }
    const std::string reason = std::string("watchdog: no progress for ") +
                               seconds + " s (stuck in " + phase_.load() + ")";
    lock.unlock();
    on_stall_(reason);
    return;
  }
}

// ------------------------------------------------------- model state

namespace {

// Copies `tensors` into one flat float CPU tensor, so a whole set moves in
// one collective.
torch::Tensor Flatten(const std::vector<torch::Tensor>& tensors) {
  int64_t total = 0;
  for (const auto& t : tensors) total += t.numel();
  torch::Tensor flat = torch::zeros({total}, torch::kFloat32);
  int64_t offset = 0;
  for (const auto& t : tensors) {
    if (t.defined()) {
      flat.slice(0, offset, offset + t.numel())
          .copy_(t.detach().reshape(-1).to(torch::kCPU, torch::kFloat32));
    }
    offset += t.numel();
  }
  return flat;
}

// Writes the slices of `flat` back into `tensors`, in place.
void Unflatten(const torch::Tensor& flat, std::vector<torch::Tensor>& tensors) {
  torch::NoGradGuard no_grad;
  int64_t offset = 0;
  for (auto& t : tensors) {
    t.copy_(flat.slice(0, offset, offset + t.numel()).view_as(t));
    offset += t.numel();
  }
}

}  // namespace

void BroadcastModuleState(Collectives& collectives, torch::nn::Module& module) {
  std::vector<torch::Tensor> state = module.parameters();
  for (auto& b : module.buffers()) state.push_back(b);
  torch::Tensor flat = Flatten(state);
  collectives.BroadcastFromRank0(flat);
  Unflatten(flat, state);
}

void AverageFloatBuffers(Collectives& collectives, torch::nn::Module& module) {
  std::vector<torch::Tensor> buffers;
  for (auto& b : module.buffers()) {
    if (b.is_floating_point()) buffers.push_back(b);
  }
  torch::Tensor flat = Flatten(buffers);
  collectives.AllReduceSum(flat);
  flat.div_(collectives.world_size());
  Unflatten(flat, buffers);
}

torch::Tensor GatherRows(Collectives& collectives,
                         const std::vector<double>& rows, int64_t width) {
  const int world = collectives.world_size();
  const int rank = collectives.rank();
  const int64_t mine = static_cast<int64_t>(rows.size()) / width;
  torch::Tensor counts = torch::zeros({world}, torch::kFloat64);
  counts[rank] = static_cast<double>(mine);
  collectives.AllReduceSum(counts);
  const auto largest = static_cast<int64_t>(counts.max().item<double>());
  if (largest == 0) return torch::zeros({0, width}, torch::kFloat64);
  torch::Tensor slots = torch::zeros({world, largest, width}, torch::kFloat64);
  if (mine > 0) {
    slots[rank]
        .narrow(0, 0, mine)
        .copy_(torch::from_blob(const_cast<double*>(rows.data()), {mine, width},
                                torch::kFloat64));
  }
  collectives.AllReduceSum(slots);
  std::vector<torch::Tensor> parts;
  for (int r = 0; r < world; ++r) {
    parts.push_back(
        slots[r].narrow(0, 0, static_cast<int64_t>(counts[r].item<double>())));
  }
  return torch::cat(parts).contiguous();
}

}  // namespace hpcai500::worker
