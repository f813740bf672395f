#include "worker/models/resnet.h"

#include <stdexcept>

#include "worker/models/model_zoo.h"

namespace hpcai500::worker {

namespace {

torch::nn::Conv2d Conv(int64_t in, int64_t out, int64_t kernel, int64_t stride,
                       int64_t padding) {
  return torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, kernel)
                               .stride(stride)
                               .padding(padding)
                               .bias(false));
}

torch::nn::Conv2d Conv3x3(int64_t in, int64_t out, int64_t stride) {
  return Conv(in, out, /*kernel=*/3, stride, /*padding=*/1);
}

torch::nn::Conv2d Conv1x1(int64_t in, int64_t out, int64_t stride) {
  return Conv(in, out, /*kernel=*/1, stride, /*padding=*/0);
}

// A 1x1 projection with BatchNorm when the block changes shape, else null.
torch::nn::Sequential Downsample(int64_t in, int64_t out, int64_t stride) {
  if (stride == 1 && in == out) return torch::nn::Sequential(nullptr);
  return torch::nn::Sequential(Conv1x1(in, out, stride),
                               torch::nn::BatchNorm2d(out));
}

struct Architecture {
  bool bottleneck;
  std::array<int64_t, 4> blocks;
};

Architecture ArchitectureFor(int depth) {
  switch (depth) {
    case 18:
      return {false, {2, 2, 2, 2}};
    case 34:
      return {false, {3, 4, 6, 3}};
    case 50:
      return {true, {3, 4, 6, 3}};
    case 101:
      return {true, {3, 4, 23, 3}};
    default:
      throw std::invalid_argument("ResNet depth " + std::to_string(depth) +
                                  " is not one of 18, 34, 50, 101");
  }
}

}  // namespace

int ResNetDepthFromName(const std::string& model) {
  return DepthOfModel(model, ModelFamily::kResNet);
}

BnRelu::BnRelu(torch::nn::Module& owner, const std::string& name,
               int64_t channels, bool fused) {
  if (fused) {
    fused_ = owner.register_module(name, FusedBatchNormAct2d(channels));
  } else {
    plain_ = owner.register_module(name, torch::nn::BatchNorm2d(channels));
  }
}

torch::Tensor BnRelu::operator()(const torch::Tensor& x) {
  if (fused_) return fused_(x);
  return torch::relu(plain_(x));
}

torch::Tensor BnRelu::AddRelu(const torch::Tensor& x,
                              const torch::Tensor& residual) {
  if (fused_) return fused_(x, residual);
  torch::Tensor y = plain_(x);
  y += residual;
  return torch::relu_(y);
}

torch::Tensor& BnRelu::weight() {
  return fused_ ? fused_->weight : plain_->weight;
}

BasicBlockImpl::BasicBlockImpl(int64_t in_channels, int64_t planes,
                               int64_t stride, bool fused_bn)
    : conv1_(register_module("conv1", Conv3x3(in_channels, planes, stride))),
      conv2_(register_module("conv2", Conv3x3(planes, planes, /*stride=*/1))),
      bn1_(*this, "bn1", planes, fused_bn),
      bn2_(*this, "bn2", planes, fused_bn) {
  downsample_ = Downsample(in_channels, planes * kExpansion, stride);
  if (downsample_) register_module("downsample", downsample_);
}

torch::Tensor BasicBlockImpl::forward(const torch::Tensor& x) {
  torch::Tensor y = bn1_(conv1_(x));
  y = conv2_(y);
  return bn2_.AddRelu(y, downsample_ ? downsample_->forward(x) : x);
}

BottleneckImpl::BottleneckImpl(int64_t in_channels, int64_t planes,
                               int64_t stride, bool fused_bn)
    : conv1_(
          register_module("conv1", Conv1x1(in_channels, planes, /*stride=*/1))),
      conv2_(register_module("conv2", Conv3x3(planes, planes, stride))),
      conv3_(register_module(
          "conv3", Conv1x1(planes, planes * kExpansion, /*stride=*/1))),
      bn1_(*this, "bn1", planes, fused_bn),
      bn2_(*this, "bn2", planes, fused_bn),
      bn3_(*this, "bn3", planes * kExpansion, fused_bn) {
  downsample_ = Downsample(in_channels, planes * kExpansion, stride);
  if (downsample_) register_module("downsample", downsample_);
}

torch::Tensor BottleneckImpl::forward(const torch::Tensor& x) {
  torch::Tensor y = bn1_(conv1_(x));
  y = conv3_(bn2_(conv2_(y)));
  return bn3_.AddRelu(y, downsample_ ? downsample_->forward(x) : x);
}

ResNetImpl::ResNetImpl(const ResNetOptions& options) : options_(options) {
  const Architecture arch = ArchitectureFor(options.depth);
  if (options.in_channels < 1) {
    throw std::invalid_argument("ResNet in_channels must be >= 1, got " +
                                std::to_string(options.in_channels));
  }
  if (options.num_classes < 0) {
    throw std::invalid_argument("ResNet num_classes must be >= 0, got " +
                                std::to_string(options.num_classes));
  }
  bottleneck_ = arch.bottleneck;
  conv1_ = register_module(
      "conv1", options.small_input_stem
                   ? Conv(options.in_channels, 64, /*kernel=*/3, /*stride=*/1,
                          /*padding=*/1)
                   : Conv(options.in_channels, 64, /*kernel=*/7,
                          /*stride=*/2, /*padding=*/3));
  bn1_ = BnRelu(*this, "bn1", 64, options.fused_bn);
  in_channels_ = 64;
  layer1_ = register_module("layer1", MakeStage(64, arch.blocks[0], 1));
  layer2_ = register_module("layer2", MakeStage(128, arch.blocks[1], 2));
  layer3_ = register_module("layer3", MakeStage(256, arch.blocks[2], 2));
  layer4_ = register_module("layer4", MakeStage(512, arch.blocks[3], 2));
  if (options.num_classes > 0) {
    fc_ = register_module(
        "fc", torch::nn::Linear(feature_channels()[3], options.num_classes));
  }

  torch::NoGradGuard no_grad;
  for (auto& module : modules(/*include_self=*/false)) {
    if (auto* conv = module->as<torch::nn::Conv2d>()) {
      torch::nn::init::kaiming_normal_(conv->weight, /*a=*/0, torch::kFanOut,
                                       torch::kReLU);
    } else if (auto* bn = module->as<torch::nn::BatchNorm2d>()) {
      torch::nn::init::ones_(bn->weight);
      torch::nn::init::zeros_(bn->bias);
    }
  }
  if (options.zero_init_last_bn) {
    for (auto& module : modules(/*include_self=*/false)) {
      if (auto* block = module->as<BasicBlock>()) {
        torch::nn::init::zeros_(block->last_bn().weight());
      } else if (auto* block = module->as<Bottleneck>()) {
        torch::nn::init::zeros_(block->last_bn().weight());
      }
    }
  }
}

torch::nn::Sequential ResNetImpl::MakeStage(int64_t planes, int64_t blocks,
                                            int64_t stride) {
  torch::nn::Sequential stage;
  for (int64_t i = 0; i < blocks; ++i) {
    const int64_t block_stride = i == 0 ? stride : 1;
    if (bottleneck_) {
      stage->push_back(
          Bottleneck(in_channels_, planes, block_stride, options_.fused_bn));
      in_channels_ = planes * BottleneckImpl::kExpansion;
    } else {
      stage->push_back(
          BasicBlock(in_channels_, planes, block_stride, options_.fused_bn));
      in_channels_ = planes * BasicBlockImpl::kExpansion;
    }
  }
  return stage;
}

std::array<int64_t, 4> ResNetImpl::feature_channels() const {
  const int64_t e =
      bottleneck_ ? BottleneckImpl::kExpansion : BasicBlockImpl::kExpansion;
  return {64 * e, 128 * e, 256 * e, 512 * e};
}

torch::Tensor ResNetImpl::Stem(const torch::Tensor& x) {
  torch::Tensor y = bn1_(conv1_(x));
  if (options_.small_input_stem) return y;
  return torch::max_pool2d(y, /*kernel_size=*/3, /*stride=*/2,
                           /*padding=*/1);
}

ResNetFeatures ResNetImpl::Features(const torch::Tensor& x) {
  ResNetFeatures f;
  f.c2 = layer1_->forward(Stem(x));
  f.c3 = layer2_->forward(f.c2);
  f.c4 = layer3_->forward(f.c3);
  f.c5 = layer4_->forward(f.c4);
  return f;
}

torch::Tensor ResNetImpl::forward(const torch::Tensor& x) {
  torch::Tensor y = layer1_->forward(Stem(x));
  y = layer4_->forward(layer3_->forward(layer2_->forward(y)));
  y = torch::adaptive_avg_pool2d(y, {1, 1}).flatten(1);
  return fc_ ? fc_->forward(y) : y;
}

}  // namespace hpcai500::worker
