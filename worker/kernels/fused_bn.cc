#include "worker/kernels/fused_bn.h"

#include <optional>
#include <ostream>
#include <stdexcept>

#include "worker/kernels/fused_bn_host.h"
#include "worker/kernels/fused_bn_math.h"

#ifdef HPCAI500_WORKER_KERNELS_CUDA
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "worker/kernels/fused_bn_cuda.h"
#endif

namespace hpcai500::worker {

namespace {

namespace k = kernels;
using torch::Tensor;
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// What a forward pass keeps besides its output.
struct ForwardResult {
  Tensor y;
  Tensor input;  // x as the backward pass reads it
  Tensor save_mean, save_invstd;
};

struct Gradients {
  Tensor dx, dresidual, dweight, dbias;
};

k::BnShape ShapeOf(const Tensor& x) {
  return {x.size(0) * x.size(2) * x.size(3), x.size(1)};
}

void CheckInputs(const Tensor& x, const Tensor& residual,
                 const std::vector<Tensor>& per_channel, bool training) {
  TORCH_CHECK(x.dim() == 4, "fused batch norm: expected a 4-D input, got ",
              x.dim(), "-D");
  TORCH_CHECK(!residual.defined() || residual.sizes() == x.sizes(),
              "fused batch norm: the residual's shape ", residual.sizes(),
              " is not the input's ", x.sizes());
  TORCH_CHECK(!residual.defined() || residual.device() == x.device(),
              "fused batch norm: residual and input on different devices");
  for (const Tensor& t : per_channel) {
    TORCH_CHECK(t.scalar_type() == torch::kFloat && t.dim() == 1 &&
                    t.numel() == x.size(1) && t.device() == x.device(),
                "fused batch norm: weight, bias and running statistics must "
                "be float32 [",
                x.size(1), "] on the input's device");
  }
  // torch::nn::BatchNorm2d's own message.
  TORCH_CHECK(!training || ShapeOf(x).rows > 1,
              "Expected more than 1 value per channel when training, got "
              "input size ",
              x.sizes());
}

// fp32, dense NHWC: what the host implementation reads.
Tensor HostLayout(const Tensor& t) {
  if (!t.defined()) return t;
  return t.to(torch::kFloat).contiguous(torch::MemoryFormat::ChannelsLast);
}

Tensor EmptyNhwc(const Tensor& like, torch::ScalarType dtype) {
  return torch::empty(like.sizes(), like.options().dtype(dtype).memory_format(
                                        torch::MemoryFormat::ChannelsLast));
}

Tensor EmptyPerChannel(const Tensor& x) {
  return torch::empty({x.size(1)}, x.options().dtype(torch::kFloat));
}

const float* OrNull(const Tensor& t) {
  return t.defined() ? t.data_ptr<float>() : nullptr;
}

// Back to the caller's dtype and layout.
Tensor AsInput(const Tensor& nhwc_float, const Tensor& x) {
  return nhwc_float.to(x.scalar_type()).contiguous(x.suggest_memory_format());
}

ForwardResult HostForward(const Tensor& x, const Tensor& residual,
                          const Tensor& weight, const Tensor& bias,
                          const Tensor& running_mean, const Tensor& running_var,
                          bool training, double momentum, double eps) {
  const Tensor xf = HostLayout(x);
  const Tensor rf = HostLayout(residual);
  Tensor y = EmptyNhwc(xf, torch::kFloat);
  ForwardResult r{Tensor(), x, EmptyPerChannel(x), EmptyPerChannel(x)};
  const Tensor rm = running_mean.contiguous();
  const Tensor rv = running_var.contiguous();
  if (training) {
    k::HostForwardTrain(
        xf.data_ptr<float>(), OrNull(rf), weight.contiguous().data_ptr<float>(),
        bias.contiguous().data_ptr<float>(), rm.data_ptr<float>(),
        rv.data_ptr<float>(), static_cast<float>(momentum),
        static_cast<float>(eps), ShapeOf(x), y.data_ptr<float>(),
        r.save_mean.data_ptr<float>(), r.save_invstd.data_ptr<float>());
    // The buffers were written in place unless they had to be copied.
    if (!rm.is_same(running_mean)) running_mean.copy_(rm);
    if (!rv.is_same(running_var)) running_var.copy_(rv);
  } else {
    k::HostForwardEval(
        xf.data_ptr<float>(), OrNull(rf), weight.contiguous().data_ptr<float>(),
        bias.contiguous().data_ptr<float>(), rm.data_ptr<float>(),
        rv.data_ptr<float>(), static_cast<float>(eps), ShapeOf(x),
        y.data_ptr<float>(), r.save_mean.data_ptr<float>(),
        r.save_invstd.data_ptr<float>());
  }
  r.y = AsInput(y, x);
  return r;
}

Gradients HostBackward(const Tensor& dy, const Tensor& x, const Tensor& y,
                       const Tensor& weight, const Tensor& save_mean,
                       const Tensor& save_invstd, bool training,
                       bool has_residual) {
  const Tensor dyf = HostLayout(dy);
  const Tensor xf = HostLayout(x);
  const Tensor yf = HostLayout(y);
  Tensor dx = EmptyNhwc(xf, torch::kFloat);
  Tensor dresidual = has_residual ? EmptyNhwc(xf, torch::kFloat) : Tensor();
  Gradients g{Tensor(), Tensor(), EmptyPerChannel(x), EmptyPerChannel(x)};
  k::HostBackward(dyf.data_ptr<float>(), xf.data_ptr<float>(),
                  yf.data_ptr<float>(), weight.contiguous().data_ptr<float>(),
                  save_mean.data_ptr<float>(), save_invstd.data_ptr<float>(),
                  training, ShapeOf(x), dx.data_ptr<float>(),
                  has_residual ? dresidual.data_ptr<float>() : nullptr,
                  g.dweight.data_ptr<float>(), g.dbias.data_ptr<float>());
  g.dx = AsInput(dx, x);
  if (has_residual) g.dresidual = AsInput(dresidual, x);
  return g;
}

#ifdef HPCAI500_WORKER_KERNELS_CUDA

k::ElementType ElementTypeOf(const Tensor& t) {
  switch (t.scalar_type()) {
    case torch::kFloat:
      return k::ElementType::kFloat32;
    case torch::kBFloat16:
      return k::ElementType::kBFloat16;
    case torch::kHalf:
      return k::ElementType::kFloat16;
    default:
      TORCH_CHECK(false, "fused batch norm: dtype ", t.scalar_type(),
                  " is not float32, bfloat16 or float16");
  }
}

// Dense channels-last in `dtype`: what the kernels read.
Tensor KernelLayout(const Tensor& t, torch::ScalarType dtype) {
  if (!t.defined()) return t;
  return t.to(dtype).contiguous(torch::MemoryFormat::ChannelsLast);
}

void CheckLaunch(cudaError_t error) {
  TORCH_CHECK(error == cudaSuccess,
              "fused batch norm kernels: ", cudaGetErrorString(error));
}

Tensor Workspace(const Tensor& x) {
  const k::BnShape shape = ShapeOf(x);
  return torch::empty({k::WorkspaceFloats(shape.rows, shape.channels)},
                      x.options().dtype(torch::kFloat));
}

ForwardResult CudaForward(const Tensor& x, const Tensor& residual,
                          const Tensor& weight, const Tensor& bias,
                          const Tensor& running_mean, const Tensor& running_var,
                          bool training, double momentum, double eps) {
  const c10::cuda::CUDAGuard guard(x.device());
  TORCH_CHECK(weight.is_contiguous() && bias.is_contiguous() &&
                  running_mean.is_contiguous() && running_var.is_contiguous(),
              "fused batch norm: per-channel tensors must be contiguous");
  const Tensor xc = KernelLayout(x, x.scalar_type());
  const Tensor rc = KernelLayout(residual, x.scalar_type());
  ForwardResult r{EmptyNhwc(xc, xc.scalar_type()), xc, EmptyPerChannel(xc),
                  EmptyPerChannel(xc)};
  const Tensor workspace = Workspace(xc);
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream().stream();
  const void* residual_data = rc.defined() ? rc.data_ptr() : nullptr;
  if (training) {
    CheckLaunch(k::CudaForwardTrain(
        ElementTypeOf(xc), xc.data_ptr(), residual_data,
        weight.data_ptr<float>(), bias.data_ptr<float>(),
        running_mean.data_ptr<float>(), running_var.data_ptr<float>(),
        static_cast<float>(momentum), static_cast<float>(eps), ShapeOf(xc),
        r.y.data_ptr(), r.save_mean.data_ptr<float>(),
        r.save_invstd.data_ptr<float>(), workspace.data_ptr<float>(), stream));
  } else {
    CheckLaunch(k::CudaForwardEval(
        ElementTypeOf(xc), xc.data_ptr(), residual_data,
        weight.data_ptr<float>(), bias.data_ptr<float>(),
        running_mean.data_ptr<float>(), running_var.data_ptr<float>(),
        static_cast<float>(eps), ShapeOf(xc), r.y.data_ptr(),
        r.save_mean.data_ptr<float>(), r.save_invstd.data_ptr<float>(),
        workspace.data_ptr<float>(), stream));
  }
  return r;
}

Gradients CudaBackward(const Tensor& dy, const Tensor& x, const Tensor& y,
                       const Tensor& weight, const Tensor& save_mean,
                       const Tensor& save_invstd, bool training,
                       bool has_residual) {
  const c10::cuda::CUDAGuard guard(x.device());
  // x and y are the forward's: dense channels-last already.
  const Tensor dyc = KernelLayout(dy, x.scalar_type());
  Gradients g{EmptyNhwc(x, x.scalar_type()),
              has_residual ? EmptyNhwc(x, x.scalar_type()) : Tensor(),
              EmptyPerChannel(x), EmptyPerChannel(x)};
  const Tensor workspace = Workspace(x);
  CheckLaunch(k::CudaBackward(
      ElementTypeOf(x), dyc.data_ptr(), x.data_ptr(), y.data_ptr(),
      weight.data_ptr<float>(), save_mean.data_ptr<float>(),
      save_invstd.data_ptr<float>(), training, ShapeOf(x), g.dx.data_ptr(),
      has_residual ? g.dresidual.data_ptr() : nullptr,
      g.dweight.data_ptr<float>(), g.dbias.data_ptr<float>(),
      workspace.data_ptr<float>(), c10::cuda::getCurrentCUDAStream().stream()));
  return g;
}

#else  // !HPCAI500_WORKER_KERNELS_CUDA

[[noreturn]] void NoKernels() {
  TORCH_CHECK(false, "fused batch norm: ",
              FusedBnUnavailableReason(torch::Device(torch::kCUDA)));
}

ForwardResult CudaForward(const Tensor&, const Tensor&, const Tensor&,
                          const Tensor&, const Tensor&, const Tensor&, bool,
                          double, double) {
  NoKernels();
}

Gradients CudaBackward(const Tensor&, const Tensor&, const Tensor&,
                       const Tensor&, const Tensor&, const Tensor&, bool,
                       bool) {
  NoKernels();
}

#endif  // HPCAI500_WORKER_KERNELS_CUDA

// The autograd wiring: one node for the whole of relu(bn(x) + residual).
class FusedBnActFunction
    : public torch::autograd::Function<FusedBnActFunction> {
 public:
  // The residual is optional rather than an undefined Tensor: autograd
  // records every Tensor argument's metadata, which an undefined one lacks.
  static Tensor forward(AutogradContext* ctx, const Tensor& x,
                        const std::optional<Tensor>& maybe_residual,
                        const Tensor& weight, const Tensor& bias,
                        const Tensor& running_mean, const Tensor& running_var,
                        bool training, double momentum, double eps) {
    const Tensor residual = maybe_residual.value_or(Tensor());
    CheckInputs(x, residual, {weight, bias, running_mean, running_var},
                training);
    const ForwardResult r =
        x.is_cuda() ? CudaForward(x, residual, weight, bias, running_mean,
                                  running_var, training, momentum, eps)
                    : HostForward(x, residual, weight, bias, running_mean,
                                  running_var, training, momentum, eps);
    ctx->save_for_backward({r.input, r.y, weight, r.save_mean, r.save_invstd});
    ctx->saved_data["training"] = training;
    ctx->saved_data["has_residual"] = residual.defined();
    return r.y;
  }

  // One gradient per forward argument: x, residual, weight, bias, then none
  // for the running statistics and the three scalars.
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const variable_list saved = ctx->get_saved_variables();
    const bool training = ctx->saved_data["training"].toBool();
    const bool has_residual = ctx->saved_data["has_residual"].toBool();
    const Tensor& x = saved[0];
    const Gradients g =
        x.is_cuda() ? CudaBackward(grads[0], x, saved[1], saved[2], saved[3],
                                   saved[4], training, has_residual)
                    : HostBackward(grads[0], x, saved[1], saved[2], saved[3],
                                   saved[4], training, has_residual);
    return {g.dx,     g.dresidual, g.dweight, g.dbias, Tensor(),
            Tensor(), Tensor(),    Tensor(),  Tensor()};
  }
};

}  // namespace

bool FusedBnKernelsBuilt() {
#ifdef HPCAI500_WORKER_KERNELS_CUDA
  return true;
#else
  return false;
#endif
}

std::string FusedBnUnavailableReason(const torch::Device& device) {
  if (!device.is_cuda() || FusedBnKernelsBuilt()) return "";
  return "this worker was built against a LibTorch without CUDA, so without "
         "the fused batch-norm kernels";
}

Tensor FusedBatchNormAct(const Tensor& x, const Tensor& residual,
                         const Tensor& weight, const Tensor& bias,
                         const Tensor& running_mean, const Tensor& running_var,
                         bool training, double momentum, double eps) {
  const std::optional<Tensor> maybe_residual =
      residual.defined() ? std::optional<Tensor>(residual) : std::nullopt;
  return FusedBnActFunction::apply(x, maybe_residual, weight, bias,
                                   running_mean, running_var, training,
                                   momentum, eps);
}

FusedBatchNormAct2dImpl::FusedBatchNormAct2dImpl(
    const torch::nn::BatchNormOptions& options_)
    : options(options_) {
  if (!options.affine() || !options.track_running_stats()) {
    throw std::invalid_argument(
        "FusedBatchNormAct2d needs affine=true and track_running_stats=true");
  }
  reset();
}

void FusedBatchNormAct2dImpl::reset() {
  const int64_t n = options.num_features();
  weight = register_parameter("weight", torch::ones({n}));
  bias = register_parameter("bias", torch::zeros({n}));
  running_mean = register_buffer("running_mean", torch::zeros({n}));
  running_var = register_buffer("running_var", torch::ones({n}));
  num_batches_tracked = register_buffer(
      "num_batches_tracked", torch::tensor(0, torch::dtype(torch::kLong)));
}

void FusedBatchNormAct2dImpl::pretty_print(std::ostream& stream) const {
  stream << "hpcai500::FusedBatchNormAct2d(" << options.num_features()
         << ", eps=" << options.eps() << ", momentum=";
  if (options.momentum()) {
    stream << *options.momentum();
  } else {
    stream << "None";
  }
  stream << ")";
}

Tensor FusedBatchNormAct2dImpl::forward(const Tensor& x,
                                        const Tensor& residual) {
  // torch::nn::BatchNorm2d's rule: a fixed momentum, or without one the
  // cumulative average over the batches seen.
  double factor = options.momentum().value_or(0.0);
  if (is_training()) {
    torch::NoGradGuard no_grad;
    num_batches_tracked += 1;
    if (!options.momentum()) {
      factor = 1.0 / num_batches_tracked.item<double>();
    }
  }
  return FusedBatchNormAct(x, residual, weight, bias, running_mean, running_var,
                           is_training(), factor, options.eps());
}

}  // namespace hpcai500::worker
