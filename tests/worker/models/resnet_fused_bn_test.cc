// ResNetOptions::fused_bn (worker/kernels/fused_bn.h) on the CPU, through
// the host implementation of the kernels' formulas: the fused model starts
// from the same parameters as the plain one, their state dicts move both
// ways, and both train to the same losses.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "worker/models/resnet.h"

namespace hpcai500::worker {
namespace {

// max |got - want| <= atol + rtol |want|, elementwise.
void ExpectClose(const torch::Tensor& got, const torch::Tensor& want,
                 const std::string& what, double atol, double rtol) {
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  EXPECT_TRUE(torch::allclose(got, want, rtol, atol))
      << what << ": max |difference| "
      << (got - want).abs().max().item<double>();
}

ResNetOptions SmallResNet(int depth, bool fused) {
  ResNetOptions o;
  o.depth = depth;
  o.num_classes = 10;
  o.small_input_stem = true;
  o.fused_bn = fused;
  return o;
}

// Both models from the same seed: the fused one registers the same
// parameters in the same order, so it starts with the same values.
TEST(ResNetFusedBn, SameParametersFromTheSameSeedAndStateDictsMoveBothWays) {
  torch::manual_seed(6);
  ResNet plain(SmallResNet(18, false));
  torch::manual_seed(6);
  ResNet fused(SmallResNet(18, true));
  const auto plain_params = plain->named_parameters();
  const auto fused_params = fused->named_parameters();
  ASSERT_EQ(plain_params.size(), fused_params.size());
  for (const auto& item : plain_params) {
    const torch::Tensor* other = fused_params.find(item.key());
    ASSERT_NE(other, nullptr) << item.key();
    EXPECT_TRUE(torch::equal(item.value(), *other)) << item.key();
  }
  const auto plain_buffers = plain->named_buffers();
  const auto fused_buffers = fused->named_buffers();
  ASSERT_EQ(plain_buffers.keys(), fused_buffers.keys());

  // Train the plain one a step (running stats, parameters move), then load
  // its state into a freshly seeded fused model through an archive.
  torch::manual_seed(7);
  torch::Tensor x = torch::randn({4, 3, 16, 16});
  plain->train();
  plain->forward(x).sum().backward();
  {
    torch::NoGradGuard no_grad;
    for (auto& p : plain->parameters()) p -= 0.1 * p.grad();
  }
  std::stringstream archive;
  torch::save(plain, archive);
  torch::manual_seed(8);
  ResNet loaded(SmallResNet(18, true));
  torch::load(loaded, archive);
  for (bool training : {false, true}) {
    plain->train(training);
    loaded->train(training);
    ExpectClose(loaded->forward(x), plain->forward(x),
                training ? "train logits" : "eval logits", 1e-4, 1e-3);
  }
  // And back: the fused model's state into a plain one.
  std::stringstream back;
  torch::save(loaded, back);
  ResNet plain_again(SmallResNet(18, false));
  torch::load(plain_again, back);
  plain_again->eval();
  loaded->eval();
  ExpectClose(plain_again->forward(x), loaded->forward(x), "round trip", 1e-4,
              1e-3);
}

std::vector<double> TrainLosses(int depth, bool fused, int steps) {
  torch::manual_seed(9);
  ResNet model(SmallResNet(depth, fused));
  torch::optim::SGD sgd(model->parameters(),
                        torch::optim::SGDOptions(0.05).momentum(0.9));
  torch::manual_seed(10);
  torch::Tensor x = torch::randn({4, 3, 16, 16})
                        .contiguous(torch::MemoryFormat::ChannelsLast);
  torch::Tensor labels = torch::randint(10, {4}, torch::kLong);
  std::vector<double> losses;
  for (int step = 0; step < steps; ++step) {
    sgd.zero_grad();
    torch::Tensor loss =
        torch::nn::functional::cross_entropy(model->forward(x), labels);
    loss.backward();
    sgd.step();
    losses.push_back(loss.item<double>());
  }
  return losses;
}

// BasicBlock (ResNet-18) and Bottleneck (ResNet-50) models trained a few
// steps with and without the option: the same losses within 1e-4 relative
// (fp32 rounding order only).
TEST(ResNetFusedBn, TrainsToTheSameLossesAsThePlainModel) {
  for (int depth : {18, 50}) {
    const int steps = depth == 18 ? 4 : 2;
    const std::vector<double> plain = TrainLosses(depth, false, steps);
    const std::vector<double> fused = TrainLosses(depth, true, steps);
    for (int step = 0; step < steps; ++step) {
      EXPECT_NEAR(fused[step], plain[step], 1e-4 * std::abs(plain[step]))
          << "resnet" << depth << " step " << step;
    }
    // The steps learn something, so equal losses are not a constant.
    EXPECT_LT(plain.back(), plain.front()) << "resnet" << depth;
  }
}

}  // namespace
}  // namespace hpcai500::worker
