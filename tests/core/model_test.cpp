#include "core/model.h"

#include <gtest/gtest.h>

namespace replisim::core {
namespace {

// Reference figures: torchvision's published ResNet-50 (v1.5) parameter count 25,557,032 and
// 4.09 G multiply-adds per 224x224 image.
TEST(ModelPresets, ResNet50MatchesPublishedCounts) {
  const ModelPreset* preset = find_model_preset("resnet50");
  ASSERT_NE(preset, nullptr);
  const Model m = preset->build();
  EXPECT_NEAR(m.total_params(), 25.56e6, 0.01 * 25.56e6);
  const double multiply_adds = m.forward_flop_per_sample() / 2.0;
  EXPECT_NEAR(multiply_adds, 4.09e9, 0.03 * 4.09e9);
  EXPECT_EQ(m.layers.size(), 54u);  // 53 convolutions (incl. 4 projection shortcuts) + fc
  EXPECT_DOUBLE_EQ(m.input_bytes_per_sample, 224.0 * 224 * 3 * 4);
  EXPECT_EQ(m.layers.back().name, "fc");
  EXPECT_DOUBLE_EQ(m.layers.back().params, 2048.0 * 1000 + 1000);
  EXPECT_DOUBLE_EQ(m.layers.back().activation_bytes_per_sample, 4000);
}

TEST(ModelPresets, UnknownPresetIsAbsent) {
  EXPECT_EQ(find_model_preset("resnet51"), nullptr);
}

}  // namespace
}  // namespace replisim::core
