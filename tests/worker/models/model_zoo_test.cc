#include "worker/models/model_zoo.h"

#include <gtest/gtest.h>

#include <set>
#include <stdexcept>
#include <string>

#include "worker/models/resnet.h"

namespace hpcai500::worker {
namespace {

TEST(ModelZoo, NamesAreUniqueAndEachFindsItself) {
  std::set<std::string_view> names;
  for (const ModelSpec& spec : ModelZoo()) {
    EXPECT_TRUE(names.insert(spec.name).second) << spec.name;
    EXPECT_EQ(FindModel(spec.name), &spec);
  }
  EXPECT_EQ(FindModel("vgg16"), nullptr);
}

TEST(ModelZoo, ClassifiersAndDetectorsFollowTheFamily) {
  EXPECT_TRUE(IsClassifier("resnet_small"));
  EXPECT_TRUE(IsClassifier("resnet50"));
  EXPECT_FALSE(IsClassifier("faster_rcnn_resnet50"));
  EXPECT_TRUE(IsDetector("faster_rcnn_resnet18"));
  EXPECT_FALSE(IsDetector("resnet18"));
  EXPECT_FALSE(IsDetector("unknown"));
}

TEST(ModelZoo, DepthOfAModelOfAnotherFamilyNamesTheFamilysModels) {
  EXPECT_EQ(DepthOfModel("faster_rcnn_resnet34", ModelFamily::kFasterRCNN), 34);
  EXPECT_EQ(ResNetDepthFromName("resnet101"), 101);
  try {
    DepthOfModel("faster_rcnn_resnet34", ModelFamily::kResNet);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "'faster_rcnn_resnet34' (expected resnet18, resnet34, "
                  "resnet50 or resnet101)"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace hpcai500::worker
