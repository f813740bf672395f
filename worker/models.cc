#include "worker/models.h"

namespace hpcai500::worker {

namespace {

torch::nn::Conv2d Conv(int64_t in, int64_t out, int64_t kernel,
                       int64_t stride) {
  return torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, kernel)
                               .stride(stride)
                               .padding(kernel / 2)
                               .bias(false));
}

}  // namespace

void FlopCounter::AddConv(const torch::nn::Conv2dImpl& conv,
                          const torch::Tensor& output) {
  const auto& o = conv.options;
  const double kernel = static_cast<double>((*o.kernel_size())[0]) *
                        static_cast<double>((*o.kernel_size())[1]);
  const double per_output =
      2.0 * static_cast<double>(o.in_channels() / o.groups()) * kernel;
  // output: [B, Cout, Hout, Wout]; every element is one dot product.
  total_ += per_output * static_cast<double>(output.numel());
}

void FlopCounter::AddLinear(const torch::nn::LinearImpl& linear,
                            const torch::Tensor& output) {
  total_ += 2.0 * static_cast<double>(linear.options.in_features()) *
            static_cast<double>(output.numel());
}

torch::Tensor CountedConv(torch::nn::Conv2d& conv, const torch::Tensor& x,
                          FlopCounter* counter) {
  torch::Tensor y = conv->forward(x);
  if (counter != nullptr) counter->AddConv(*conv, y);
  return y;
}

torch::Tensor CountedLinear(torch::nn::Linear& linear, const torch::Tensor& x,
                            FlopCounter* counter) {
  torch::Tensor y = linear->forward(x);
  if (counter != nullptr) counter->AddLinear(*linear, y);
  return y;
}

ResidualBlockImpl::ResidualBlockImpl(int64_t in_channels, int64_t out_channels,
                                     int64_t stride)
    : conv1_(register_module("conv1", Conv(in_channels, out_channels,
                                           /*kernel=*/3, stride))),
      conv2_(register_module("conv2", Conv(out_channels, out_channels,
                                           /*kernel=*/3, /*stride=*/1))),
      bn1_(register_module("bn1", torch::nn::BatchNorm2d(out_channels))),
      bn2_(register_module("bn2", torch::nn::BatchNorm2d(out_channels))) {
  if (stride != 1 || in_channels != out_channels) {
    project_ = register_module(
        "project", Conv(in_channels, out_channels, /*kernel=*/1, stride));
    project_bn_ =
        register_module("project_bn", torch::nn::BatchNorm2d(out_channels));
  }
}

torch::Tensor ResidualBlockImpl::forward(const torch::Tensor& x,
                                         FlopCounter* counter) {
  torch::Tensor y = torch::relu(bn1_(CountedConv(conv1_, x, counter)));
  y = bn2_(CountedConv(conv2_, y, counter));
  torch::Tensor shortcut =
      project_ ? project_bn_(CountedConv(project_, x, counter)) : x;
  return torch::relu(y + shortcut);
}

ResNetSmallImpl::ResNetSmallImpl(int64_t num_classes)
    : stem_(register_module("stem", Conv(1, 16, /*kernel=*/3, /*stride=*/1))),
      stem_bn_(register_module("stem_bn", torch::nn::BatchNorm2d(16))),
      block1_(register_module("block1", ResidualBlock(16, 24, /*stride=*/2))),
      block2_(register_module("block2", ResidualBlock(24, 48, /*stride=*/2))),
      block3_(register_module("block3", ResidualBlock(48, 48, /*stride=*/1))),
      fc_(register_module("fc", torch::nn::Linear(48, num_classes))) {}

torch::Tensor ResNetSmallImpl::forward(const torch::Tensor& x,
                                       FlopCounter* counter) {
  torch::Tensor y = torch::relu(stem_bn_(CountedConv(stem_, x, counter)));
  y = block1_->forward(y, counter);
  y = block2_->forward(y, counter);
  y = block3_->forward(y, counter);
  y = y.mean({2, 3});
  return CountedLinear(fc_, y, counter);
}

double CountForwardFlopsPerSample(ResNetSmall& model,
                                  const torch::Device& device) {
  const bool was_training = model->is_training();
  model->eval();
  FlopCounter counter;
  {
    torch::NoGradGuard no_grad;
    model->forward(torch::zeros({1, 1, 28, 28}, device), &counter);
  }
  model->train(was_training);
  return counter.total();
}

}  // namespace hpcai500::worker
