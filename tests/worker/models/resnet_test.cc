#include "worker/models/resnet.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "worker/metrics/flops.h"

namespace hpcai500::worker {
namespace {

int64_t ParameterCount(torch::nn::Module& module) {
  int64_t n = 0;
  for (const auto& p : module.parameters()) n += p.numel();
  return n;
}

ResNet Build(const std::string& name, int64_t num_classes = 1000) {
  ResNetOptions options;
  options.depth = ResNetDepthFromName(name);
  options.num_classes = num_classes;
  return ResNet(options);
}

// Reference counts: torchvision 0.14 (Debian python3-torchvision, the same
// release as LibTorch 1.13), sum(p.numel() for p in resnetN().parameters()).
TEST(ResNet, ParameterCountsMatchTorchvision) {
  EXPECT_EQ(ParameterCount(*Build("resnet18")), 11'689'512);
  EXPECT_EQ(ParameterCount(*Build("resnet34")), 21'797'672);
  EXPECT_EQ(ParameterCount(*Build("resnet50")), 25'557'032);
  EXPECT_EQ(ParameterCount(*Build("resnet101")), 44'549'160);
}

TEST(ResNet, StateDictNamesFollowTorchvision) {
  ResNet model = Build("resnet50");
  const auto params = model->named_parameters();
  const auto buffers = model->named_buffers();
  for (const char* name :
       {"conv1.weight", "bn1.weight", "layer1.0.downsample.0.weight",
        "layer1.0.downsample.1.bias", "layer3.5.conv3.weight",
        "layer4.2.bn3.weight", "fc.weight", "fc.bias"}) {
    EXPECT_NE(params.find(name), nullptr) << name;
  }
  EXPECT_NE(buffers.find("layer4.2.bn3.running_var"), nullptr);
  EXPECT_EQ(params.find("layer1.1.downsample.0.weight"), nullptr);
}

// v1.5: the first bottleneck of stages 2-4 strides in its 3x3 convolution.
TEST(ResNet, DownsamplingBottleneckStridesInItsThreeByThree) {
  ResNet model = Build("resnet50");
  for (const std::string stage : {"layer2", "layer3", "layer4"}) {
    auto block = model->named_children()[stage]->named_children()["0"];
    auto conv1 = block->named_children()["conv1"]->as<torch::nn::Conv2d>();
    auto conv2 = block->named_children()["conv2"]->as<torch::nn::Conv2d>();
    auto down = block->named_children()["downsample"]
                    ->named_children()["0"]
                    ->as<torch::nn::Conv2d>();
    ASSERT_TRUE(conv1 && conv2 && down) << stage;
    EXPECT_EQ((*conv1->options.stride())[0], 1) << stage;
    EXPECT_EQ((*conv2->options.stride())[0], 2) << stage;
    EXPECT_EQ((*down->options.stride())[0], 2) << stage;
  }
}

TEST(ResNet, LastBatchNormOfEveryBlockStartsAtZeroGamma) {
  ResNet model = Build("resnet50");
  const auto params = model->named_parameters();
  int zeroed = 0;
  for (const auto& item : params) {
    const std::string& name = item.key();
    const bool last_bn = name.find(".bn3.weight") != std::string::npos;
    const bool inner_bn = name.find(".bn1.weight") != std::string::npos ||
                          name.find(".bn2.weight") != std::string::npos;
    if (last_bn) {
      EXPECT_EQ(item.value().abs().max().item<float>(), 0.0f) << name;
      ++zeroed;
    } else if (inner_bn) {
      EXPECT_EQ(item.value().min().item<float>(), 1.0f) << name;
    }
  }
  EXPECT_EQ(zeroed, 3 + 4 + 6 + 3);
  ResNet basic = Build("resnet18");
  EXPECT_EQ(basic->named_parameters()["layer2.1.bn2.weight"]
                .abs()
                .sum()
                .item<float>(),
            0.0f);
}

TEST(ResNet, ConvolutionsAreKaimingNormalFanOut) {
  ResNet model = Build("resnet50");
  // layer3.0.conv2: 256 -> 256, 3x3: std = sqrt(2 / (256 * 9)).
  torch::Tensor w = model->named_parameters()["layer3.0.conv2.weight"];
  const double expected = std::sqrt(2.0 / (256 * 9));
  EXPECT_NEAR(w.std().item<double>(), expected, 0.02 * expected);
  EXPECT_NEAR(w.mean().item<double>(), 0.0, 0.01 * expected);
}

TEST(ResNet, ForwardGivesLogitsAndStageFeatures) {
  ResNet model = Build("resnet50");
  model->eval();
  torch::NoGradGuard no_grad;
  torch::Tensor x = torch::randn({1, 3, 224, 224});
  EXPECT_EQ(model->forward(x).sizes(), torch::IntArrayRef({1, 1000}));
  ResNetFeatures f = model->Features(x);
  EXPECT_EQ(f.c2.sizes(), torch::IntArrayRef({1, 256, 56, 56}));
  EXPECT_EQ(f.c3.sizes(), torch::IntArrayRef({1, 512, 28, 28}));
  EXPECT_EQ(f.c4.sizes(), torch::IntArrayRef({1, 1024, 14, 14}));
  EXPECT_EQ(f.c5.sizes(), torch::IntArrayRef({1, 2048, 7, 7}));
  // Channels-last input gives the same logits.
  torch::Tensor nhwc = x.contiguous(torch::MemoryFormat::ChannelsLast);
  EXPECT_TRUE(torch::allclose(model->forward(nhwc), model->forward(x),
                              /*rtol=*/1e-4, /*atol=*/1e-4));
}

// Reference: 8,178,368,512, from torch.profiler(with_flops=True) over
// torchvision's resnet50 on one 1x3x224x224 image (the same figure as summing
// 2 * Cin * kh * kw * output elements over its convolutions plus
// 2 * 2048 * 1000 for fc): 4.09 GMACs.
TEST(ResNet, ResNet50ForwardFlopsMatchThePyTorchProfiler) {
  ResNet model = Build("resnet50");
  model->eval();
  torch::NoGradGuard no_grad;
  torch::Tensor x = torch::zeros({1, 3, 224, 224});
  FlopCounter counter;
  model->forward(x);
  EXPECT_EQ(counter.Stop().flops, 8'178'368'512.0);
}

TEST(ResNet, BackboneWithSixteenInputChannelsAndNoHead) {
  ResNetOptions options;
  options.depth = 18;
  options.in_channels = 16;
  options.num_classes = 0;
  ResNet model(options);
  EXPECT_EQ(model->named_parameters().find("fc.weight"), nullptr);
  EXPECT_EQ(model->feature_channels(),
            (std::array<int64_t, 4>{64, 128, 256, 512}));
  model->eval();
  torch::NoGradGuard no_grad;
  torch::Tensor x = torch::randn({2, 16, 64, 96});
  EXPECT_EQ(model->forward(x).sizes(), torch::IntArrayRef({2, 512}));
  EXPECT_EQ(model->Features(x).c5.sizes(), torch::IntArrayRef({2, 512, 2, 3}));
}

// Reference: torchvision resnet18(num_classes=10) with conv1 replaced by a
// 3x3 stride-1 convolution and maxpool by Identity: 11,173,962 parameters.
TEST(ResNet, SmallInputStemKeepsThirtyTwoPixelResolution) {
  ResNetOptions options;
  options.depth = 18;
  options.num_classes = 10;
  options.small_input_stem = true;
  ResNet model(options);
  EXPECT_EQ(ParameterCount(*model), 11'173'962);
  model->eval();
  torch::NoGradGuard no_grad;
  torch::Tensor x = torch::randn({2, 3, 32, 32});
  EXPECT_EQ(model->forward(x).sizes(), torch::IntArrayRef({2, 10}));
  ResNetFeatures f = model->Features(x);
  EXPECT_EQ(f.c2.sizes(), torch::IntArrayRef({2, 64, 32, 32}));
  EXPECT_EQ(f.c5.sizes(), torch::IntArrayRef({2, 512, 4, 4}));
}

TEST(ResNet, RejectsUnknownModelsAndBadOptions) {
  EXPECT_THROW(ResNetDepthFromName("resnet152"), std::invalid_argument);
  try {
    ResNetDepthFromName("vgg16");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("vgg16"), std::string::npos);
  }
  ResNetOptions options;
  options.depth = 20;
  EXPECT_THROW(ResNet{options}, std::invalid_argument);
  options.depth = 18;
  options.in_channels = 0;
  EXPECT_THROW(ResNet{options}, std::invalid_argument);
}

TEST(ResNet, TrainingStepReducesLossOnAFixedBatch) {
  ResNetOptions options;
  options.depth = 18;
  options.num_classes = 4;
  options.small_input_stem = true;
  ResNet model(options);
  torch::manual_seed(1);
  torch::Tensor x = torch::randn({8, 3, 16, 16});
  torch::Tensor y = torch::arange(8) % 4;
  torch::optim::SGD sgd(model->parameters(),
                        torch::optim::SGDOptions(0.05).momentum(0.9));
  double first = 0, last = 0;
  for (int step = 0; step < 8; ++step) {
    sgd.zero_grad();
    torch::Tensor loss =
        torch::nn::functional::cross_entropy(model->forward(x), y);
    loss.backward();
    sgd.step();
    if (step == 0) first = loss.item<double>();
    last = loss.item<double>();
  }
  EXPECT_LT(last, first * 0.7);
}

}  // namespace
}  // namespace hpcai500::worker
