#include "worker/models/faster_rcnn.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

namespace hpcai500::worker {
namespace {

constexpr int64_t kHeight = 96;
constexpr int64_t kWidth = 144;

// A small but complete configuration: ResNet-18 C4, few proposals.
FasterRCNNOptions SmallOptions() {
  FasterRCNNOptions o;
  o.backbone_depth = 18;
  o.representation_size = 64;
  o.rpn_pre_nms_top_n_train = 300;
  o.rpn_post_nms_top_n_train = 100;
  o.rpn_pre_nms_top_n_test = 200;
  o.rpn_post_nms_top_n_test = 50;
  o.rpn_batch_size_per_image = 64;
  o.box_batch_size_per_image = 64;
  o.seed = 11;
  return o;
}

// Two images with a bright "cyclone" and an elongated "river" band in a few
// channels, and their boxes (x1, y1, x2, y2).
struct Batch {
  torch::Tensor images;
  std::vector<DetectionTarget> targets;
};

Batch SyntheticBatch() {
  torch::manual_seed(1);
  Batch batch;
  batch.images = 0.1 * torch::randn({2, 16, kHeight, kWidth});
  auto paint = [&](int64_t b, int64_t x1, int64_t y1, int64_t x2, int64_t y2,
                   int64_t channel) {
    batch.images[b]
        .narrow(0, channel, 3)
        .narrow(1, y1, y2 - y1)
        .narrow(2, x1, x2 - x1)
        .add_(2.0);
  };
  paint(0, 20, 30, 52, 62, 0);
  paint(1, 10, 10, 42, 42, 0);
  paint(1, 60, 50, 140, 70, 6);
  batch.targets.push_back({torch::tensor({{20.f, 30.f, 52.f, 62.f}}),
                           torch::tensor({1}, torch::kLong)});
  batch.targets.push_back(
      {torch::tensor({{10.f, 10.f, 42.f, 42.f}, {60.f, 50.f, 140.f, 70.f}}),
       torch::tensor({1, 3}, torch::kLong)});
  return batch;
}

TEST(FasterRCNN, TrainingReturnsFiniteNamedLosses) {
  FasterRCNN model(SmallOptions());
  model->train();
  Batch batch = SyntheticBatch();
  auto losses = model->Losses(batch.images, batch.targets);
  std::vector<std::string> names;
  for (const auto& [name, value] : losses) {
    names.push_back(name);
    EXPECT_EQ(value.dim(), 0) << name;
    EXPECT_TRUE(std::isfinite(value.item<float>())) << name;
    EXPECT_GE(value.item<float>(), 0.0f) << name;
  }
  EXPECT_EQ(names,
            (std::vector<std::string>{"loss_box_reg", "loss_classifier",
                                      "loss_objectness", "loss_rpn_box_reg"}));
  // With 5 classes at init the classifier starts near log(5).
  EXPECT_NEAR(losses["loss_classifier"].item<float>(), std::log(5.0), 0.2);
}

TEST(FasterRCNN, SgdStepsOnAFixedBatchReduceTheLoss) {
  FasterRCNN model(SmallOptions());
  model->train();
  Batch batch = SyntheticBatch();
  torch::optim::SGD sgd(model->parameters(),
                        torch::optim::SGDOptions(0.01).momentum(0.9));
  std::vector<float> totals;
  double seconds = 0;
  constexpr int kSteps = 12;
  for (int step = 0; step < kSteps; ++step) {
    auto start = std::chrono::steady_clock::now();
    sgd.zero_grad();
    torch::Tensor loss =
        FasterRCNNImpl::TotalLoss(model->Losses(batch.images, batch.targets));
    loss.backward();
    sgd.step();
    seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    totals.push_back(loss.item<float>());
  }
  std::printf("train step (batch 2, %ldx%ld, resnet18 C4): %.3f s\n",
              static_cast<long>(kHeight), static_cast<long>(kWidth),
              seconds / kSteps);
  const float first = (totals[0] + totals[1]) / 2;
  const float last = (totals[kSteps - 1] + totals[kSteps - 2]) / 2;
  std::printf("total loss: first two %.3f, last two %.3f\n", first, last);
  EXPECT_LT(last, 0.8f * first) << "first " << first << " last " << last;
}

TEST(FasterRCNN, GradientsReachTheBackboneAndUnusedStagesAreDropped) {
  FasterRCNN model(SmallOptions());
  model->train();
  Batch batch = SyntheticBatch();
  FasterRCNNImpl::TotalLoss(model->Losses(batch.images, batch.targets))
      .backward();
  bool saw_conv1 = false;
  for (const auto& item : model->named_parameters()) {
    EXPECT_EQ(item.key().find("layer4"), std::string::npos)
        << item.key() << " is never used with C4 features";
    if (item.key() == "backbone.conv1.weight") {
      saw_conv1 = true;
      ASSERT_TRUE(item.value().grad().defined());
      EXPECT_GT(item.value().grad().abs().sum().item<float>(), 0.0f);
    }
  }
  EXPECT_TRUE(saw_conv1);
}

TEST(FasterRCNN, AnImageWithoutBoxesGivesFiniteLosses) {
  FasterRCNN model(SmallOptions());
  model->train();
  Batch batch = SyntheticBatch();
  batch.targets[0] = {torch::zeros({0, 4}), torch::zeros({0}, torch::kLong)};
  batch.targets[1] = batch.targets[0];
  auto losses = model->Losses(batch.images, batch.targets);
  for (const auto& [name, value] : losses) {
    EXPECT_TRUE(std::isfinite(value.item<float>())) << name;
  }
  EXPECT_EQ(losses["loss_box_reg"].item<float>(), 0.0f);
  EXPECT_EQ(losses["loss_rpn_box_reg"].item<float>(), 0.0f);
  torch::Tensor total = FasterRCNNImpl::TotalLoss(losses);
  total.backward();
  EXPECT_GT(total.item<float>(), 0.0f);
}

TEST(FasterRCNN, EvaluationReturnsDetectionsInsideTheImage) {
  FasterRCNNOptions options = SmallOptions();
  FasterRCNN model(options);
  model->eval();
  torch::NoGradGuard no_grad;
  Batch batch = SyntheticBatch();
  std::vector<Detections> detections = model->Detect(batch.images);
  ASSERT_EQ(detections.size(), 2u);
  int64_t total = 0;
  for (const Detections& d : detections) {
    const int64_t n = d.boxes.size(0);
    total += n;
    ASSERT_EQ(d.boxes.sizes(), (std::vector<int64_t>{n, 4}));
    ASSERT_EQ(d.scores.size(0), n);
    ASSERT_EQ(d.labels.size(0), n);
    EXPECT_LE(n, options.detections_per_image);
    if (n == 0) continue;
    EXPECT_GE(d.boxes.min().item<float>(), 0.0f);
    EXPECT_LE(d.boxes.select(1, 2).max().item<float>(), kWidth);
    EXPECT_LE(d.boxes.select(1, 3).max().item<float>(), kHeight);
    EXPECT_TRUE(
        (d.boxes.select(1, 2) > d.boxes.select(1, 0)).all().item<bool>());
    EXPECT_GE(d.scores.min().item<float>(), options.box_score_threshold);
    EXPECT_LE(d.scores.max().item<float>(), 1.0f);
    EXPECT_GE(d.labels.min().item<int64_t>(), 0);
    EXPECT_LT(d.labels.max().item<int64_t>(), options.num_classes);
    // Sorted by decreasing score.
    EXPECT_TRUE((d.scores.slice(0, 1) <= d.scores.slice(0, 0, n - 1))
                    .all()
                    .item<bool>());
  }
  // An untrained head scores every class near 1/5 > 0.05: detections exist.
  EXPECT_GT(total, 0);
}

TEST(FasterRCNN, RejectsBadInputsNamingTheProblem) {
  FasterRCNN model(SmallOptions());
  Batch batch = SyntheticBatch();
  batch.targets[1].labels = torch::tensor({1, 4}, torch::kLong);
  try {
    model->Losses(batch.images, batch.targets);
    FAIL() << "label 4 accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("target 1"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(model->Detect(torch::zeros({1, 3, kHeight, kWidth})),
               std::invalid_argument);
  FasterRCNNOptions bad = SmallOptions();
  bad.feature_stage = 7;
  EXPECT_THROW(FasterRCNN{bad}, std::invalid_argument);
}

// The convolutional form of fc6/fc7 (conv_box_head) is the same function of
// the same parameters as the linear one: equal losses, gradients and
// detections up to float rounding.
TEST(FasterRCNN, ConvolutionalBoxHeadMatchesTheLinearOne) {
  FasterRCNNOptions conv_options = SmallOptions();
  conv_options.conv_box_head = true;
  FasterRCNNOptions linear_options = SmallOptions();
  linear_options.conv_box_head = false;
  FasterRCNN conv(conv_options);
  FasterRCNN linear(linear_options);
  {
    torch::NoGradGuard no_grad;
    auto from = conv->named_parameters();
    for (auto& p : linear->named_parameters()) p.value().copy_(from[p.key()]);
    auto buffers = conv->named_buffers();
    for (auto& b : linear->named_buffers()) b.value().copy_(buffers[b.key()]);
  }
  conv->train();
  linear->train();
  Batch batch = SyntheticBatch();
  auto conv_losses = conv->Losses(batch.images, batch.targets);
  auto linear_losses = linear->Losses(batch.images, batch.targets);
  ASSERT_EQ(conv_losses.size(), linear_losses.size());
  for (const auto& [name, value] : conv_losses) {
    EXPECT_NEAR(value.item<float>(), linear_losses[name].item<float>(),
                1e-4 * (1.0 + std::abs(value.item<float>())))
        << name;
  }
  FasterRCNNImpl::TotalLoss(conv_losses).backward();
  FasterRCNNImpl::TotalLoss(linear_losses).backward();
  auto linear_params = linear->named_parameters();
  for (const auto& p : conv->named_parameters()) {
    const torch::Tensor& g = p.value().grad();
    const torch::Tensor& h = linear_params[p.key()].grad();
    ASSERT_TRUE(g.defined() && h.defined()) << p.key();
    EXPECT_TRUE(
        torch::allclose(g, h, /*rtol=*/1e-3,
                        /*atol=*/1e-5 * (1 + h.abs().max().item<float>())))
        << p.key() << " max diff " << (g - h).abs().max().item<float>();
  }
  // The first parameter the head's form touches must have a real gradient.
  EXPECT_GT(
      conv->named_parameters()["fc6.weight"].grad().abs().sum().item<float>(),
      0.0f);

  conv->eval();
  linear->eval();
  torch::NoGradGuard no_grad;
  std::vector<Detections> a = conv->Detect(batch.images);
  std::vector<Detections> b = linear->Detect(batch.images);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].scores.size(0), b[i].scores.size(0)) << "image " << i;
    EXPECT_TRUE(torch::allclose(a[i].scores, b[i].scores, 1e-3, 1e-5));
  }
}

TEST(DetectorOptionsFor, SwitchesFromC3ToC4FeaturesAt192Rows) {
  ASSERT_EQ(kDetectorMinRowsForC4, 192);
  EXPECT_EQ(
      DetectorOptionsFor("faster_rcnn_resnet18", 16, 96, 0, 0).feature_stage,
      3);
  EXPECT_EQ(
      DetectorOptionsFor("faster_rcnn_resnet18", 16, 191, 0, 0).feature_stage,
      3);
  EXPECT_EQ(
      DetectorOptionsFor("faster_rcnn_resnet18", 16, 192, 0, 0).feature_stage,
      4);
  EXPECT_EQ(
      DetectorOptionsFor("faster_rcnn_resnet18", 16, 768, 0, 0).feature_stage,
      4);
}

TEST(DetectorOptionsFor, ScalesTheDefaultAnchorsWithTheGridHeight) {
  const std::vector<double> defaults = FasterRCNNOptions().anchor_sizes;
  EXPECT_EQ(
      DetectorOptionsFor("faster_rcnn_resnet50", 16, 96, 0, 0).anchor_sizes,
      defaults);
  const FasterRCNNOptions full =
      DetectorOptionsFor("faster_rcnn_resnet50", 16, 768, 0, 0);
  ASSERT_EQ(full.anchor_sizes.size(), defaults.size());
  for (size_t i = 0; i < defaults.size(); ++i) {
    EXPECT_DOUBLE_EQ(full.anchor_sizes[i], 8 * defaults[i]) << i;
  }
  EXPECT_DOUBLE_EQ(
      DetectorOptionsFor("faster_rcnn_resnet50", 16, 48, 0, 0).anchor_sizes[0],
      defaults[0] / 2);
  EXPECT_EQ(full.anchor_aspect_ratios,
            FasterRCNNOptions().anchor_aspect_ratios);
}

TEST(DetectorOptionsFor, FewerRoisCapTheProposalsKept) {
  const FasterRCNNOptions defaults;
  const FasterRCNNOptions same =
      DetectorOptionsFor("faster_rcnn_resnet18", 16, 96, 0, 0);
  EXPECT_EQ(same.box_batch_size_per_image, defaults.box_batch_size_per_image);
  EXPECT_EQ(same.rpn_post_nms_top_n_train, defaults.rpn_post_nms_top_n_train);
  EXPECT_EQ(same.rpn_post_nms_top_n_test, defaults.rpn_post_nms_top_n_test);
  EXPECT_EQ(same.representation_size, defaults.representation_size);

  // 64 RoIs: at most 4 x 64 proposals kept in training, 2 x 64 in evaluation.
  const FasterRCNNOptions few =
      DetectorOptionsFor("faster_rcnn_resnet18", 16, 96, 64, 128);
  EXPECT_EQ(few.box_batch_size_per_image, 64);
  EXPECT_EQ(few.rpn_post_nms_top_n_train, 256);
  EXPECT_EQ(few.rpn_post_nms_top_n_test, 128);
  EXPECT_EQ(few.representation_size, 128);
  EXPECT_EQ(few.rpn_pre_nms_top_n_train, defaults.rpn_pre_nms_top_n_train);

  // Caps never raise the defaults.
  const FasterRCNNOptions many =
      DetectorOptionsFor("faster_rcnn_resnet18", 16, 96, 400, 0);
  EXPECT_EQ(many.box_batch_size_per_image, 400);
  EXPECT_EQ(many.rpn_post_nms_top_n_train, defaults.rpn_post_nms_top_n_train);
  EXPECT_EQ(many.rpn_post_nms_top_n_test, defaults.rpn_post_nms_top_n_test);
}

TEST(DetectorOptionsFor, TakesTheDepthAndChannelsAndBuildsAModel) {
  const FasterRCNNOptions o =
      DetectorOptionsFor("faster_rcnn_resnet34", 5, 64, 32, 64);
  EXPECT_EQ(o.backbone_depth, 34);
  EXPECT_EQ(o.in_channels, 5);
  EXPECT_EQ(o.num_classes, FasterRCNNOptions().num_classes);
  EXPECT_EQ(
      DetectorOptionsFor("faster_rcnn_resnet101", 16, 96, 0, 0).backbone_depth,
      101);
  FasterRCNN model(o);
  model->eval();
  torch::NoGradGuard no_grad;
  EXPECT_EQ(model->Detect(torch::zeros({1, 5, 64, 96})).size(), 1u);
}

TEST(DetectorOptionsFor, RejectsAnythingButFasterRcnnResNetModels) {
  for (const char* model : {"resnet18", "faster_rcnn_resnet19", "faster_rcnn_",
                            "faster_rcnn_resnet18x", ""}) {
    try {
      DetectorOptionsFor(model, 16, 96, 0, 0);
      FAIL() << "accepted '" << model << "'";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("'" + std::string(model) + "'"),
                std::string::npos)
          << e.what();
    }
  }
  EXPECT_THROW(DetectorOptionsFor("faster_rcnn_resnet18", 16, 0, 0, 0),
               std::invalid_argument);
  EXPECT_THROW(DetectorOptionsFor("faster_rcnn_resnet18", 16, 96, -1, 0),
               std::invalid_argument);
}

}  // namespace
}  // namespace hpcai500::worker
