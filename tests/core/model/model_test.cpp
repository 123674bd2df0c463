#include "core/model/model.h"

#include <set>

#include <gtest/gtest.h>

#include "core/base/error.h"
#include "core/base/json_cursor.h"
#include "core/scenario/scenario.h"
#include "core/scenario/scenario_model.h"
#include "tests/support/test_support.h"

namespace replisim::core {
namespace {

Model build_preset(const std::string& name, const PresetOptions& options = {}) {
  const ModelPreset* preset = find_model_preset(name);
  if (preset == nullptr) throw std::runtime_error("no preset " + name);
  return preset->build(options);
}

// Expects the preset's parameters within 1% and forward multiply-adds within 3% of the published
// figures (one multiply-add = 2 FLOP).
void expect_published_counts(const Model& m, double params, double multiply_adds) {
  EXPECT_NEAR(m.total_params(), params, 0.01 * params) << m.name;
  EXPECT_NEAR(m.forward_flop_per_sample() / 2.0, multiply_adds, 0.03 * multiply_adds) << m.name;
}

// Reference figures: torchvision's published ResNet-50 (v1.5) parameter count 25,557,032 and
// 4.09 G multiply-adds per 224x224 image.
TEST(ModelPresets, ResNet50MatchesPublishedCounts) {
  const Model m = build_preset("resnet50");
  expect_published_counts(m, 25.56e6, 4.09e9);
  EXPECT_EQ(m.layers.size(), 54u);  // 53 convolutions (incl. 4 projection shortcuts) + fc
  EXPECT_DOUBLE_EQ(m.input_bytes_per_sample, 224.0 * 224 * 3 * 4);
  EXPECT_EQ(m.layers.back().name, "fc");
  EXPECT_DOUBLE_EQ(m.layers.back().params, 2048.0 * 1000 + 1000);
  EXPECT_DOUBLE_EQ(m.layers.back().activation_bytes_per_sample, 4000);
}

// torchvision resnet101 / resnet152 (v1.5): 44,549,160 and 60,192,808 parameters; 7.80 G and
// 11.5 G multiply-adds (torchvision's model table, "GFLOPS" column, which counts multiply-adds).
TEST(ModelPresets, ResNet101MatchesPublishedCounts) {
  const Model m = build_preset("resnet101");
  expect_published_counts(m, 44.55e6, 7.80e9);
  EXPECT_EQ(m.layers.size(), 105u);  // 3 x (3 + 4 + 23 + 3) convolutions + 4 shortcuts + conv1, fc
  EXPECT_EQ(m.layers[1].name, "conv2_1/1x1a");
}

TEST(ModelPresets, ResNet152MatchesPublishedCounts) {
  const Model m = build_preset("resnet152");
  expect_published_counts(m, 60.19e6, 11.5e9);
  EXPECT_EQ(m.layers.size(), 156u);  // 3 x (3 + 8 + 36 + 3) + 4 + 2
}

// Inception v3 without the auxiliary head: 23.85 M parameters (Keras InceptionV3, whose count
// also holds the batch-norm moving statistics; torchvision aux_logits=False gives 23,834,568) and
// 5.7 G multiply-adds at 299x299.
TEST(ModelPresets, InceptionV3MatchesPublishedCounts) {
  const Model m = build_preset("inception_v3");
  expect_published_counts(m, 23.85e6, 5.7e9);
  EXPECT_EQ(m.layers.size(), 95u);  // 94 BasicConv2d (5 stem, 3x7, 4, 4x10, 6, 2x9) + fc
  EXPECT_DOUBLE_EQ(m.input_bytes_per_sample, 299.0 * 299 * 3 * 4);
  EXPECT_EQ(m.layers.front().name, "Conv2d_1a_3x3");
  // 3x3 stride 2 valid: 299 -> 149, 32 channels; batch norm instead of a bias.
  EXPECT_DOUBLE_EQ(m.layers.front().activation_bytes_per_sample, 32.0 * 149 * 149 * 4);
  EXPECT_DOUBLE_EQ(m.layers.front().params, 3.0 * 3 * 3 * 32 + 2 * 32);
  // The concatenated Mixed_7c output has 2048 channels.
  EXPECT_DOUBLE_EQ(m.layers.back().params, 2048.0 * 1000 + 1000);
}

TEST(ModelPresets, InceptionV3FactorisedKernelsAndBranchOrder) {
  const Model m = build_preset("inception_v3");
  auto find = [&](const std::string& name) -> const Layer& {
    for (const Layer& l : m.layers) {
      if (l.name == name) return l;
    }
    throw std::runtime_error("no layer " + name);
  };
  // Mixed_6b (c7 = 128) at 17x17: a 1x7 conv 128 -> 128 with "same" padding.
  const Layer& c17 = find("Mixed_6b/branch7x7_2");
  EXPECT_DOUBLE_EQ(c17.params, 1.0 * 7 * 128 * 128 + 2 * 128);
  EXPECT_DOUBLE_EQ(c17.forward_flop_per_sample, 2.0 * 7 * 128 * 128 * 17 * 17);
  EXPECT_DOUBLE_EQ(c17.activation_bytes_per_sample, 128.0 * 17 * 17 * 4);
  // Mixed_7b reads Mixed_7a's 1280 concatenated channels (320 + 192 + 768 pooled) at 8x8.
  EXPECT_DOUBLE_EQ(find("Mixed_7b/branch1x1").params, 1280.0 * 320 + 2 * 320);
  EXPECT_DOUBLE_EQ(find("Mixed_7b/branch1x1").activation_bytes_per_sample, 320.0 * 8 * 8 * 4);
  // Branches are kept in creation order, after the previous module.
  size_t pos_1x1 = 0, pos_pool = 0;
  for (size_t i = 0; i < m.layers.size(); ++i) {
    if (m.layers[i].name == "Mixed_5b/branch1x1") pos_1x1 = i;
    if (m.layers[i].name == "Mixed_5b/branch_pool") pos_pool = i;
  }
  EXPECT_EQ(pos_1x1, 5u);
  EXPECT_EQ(pos_pool, 11u);
}

// torchvision vgg16: 138,357,544 parameters, 15.47 G multiply-adds.
TEST(ModelPresets, Vgg16MatchesPublishedCounts) {
  const Model m = build_preset("vgg16");
  expect_published_counts(m, 138.36e6, 15.5e9);
  ASSERT_EQ(m.layers.size(), 16u);
  EXPECT_EQ(m.layers[13].name, "fc6");
  EXPECT_DOUBLE_EQ(m.layers[13].params, 512.0 * 7 * 7 * 4096 + 4096);
  EXPECT_DOUBLE_EQ(m.layers[12].activation_bytes_per_sample, 512.0 * 14 * 14 * 4);
}

// torchvision alexnet: 61,100,840 parameters, 0.71 G multiply-adds.
TEST(ModelPresets, AlexNetMatchesPublishedCounts) {
  const Model m = build_preset("alexnet");
  expect_published_counts(m, 61.10e6, 0.71e9);
  ASSERT_EQ(m.layers.size(), 8u);
  // 11x11 stride 4 padding 2: 224 -> 55 (not the 56 "same" padding would give).
  EXPECT_DOUBLE_EQ(m.layers[0].activation_bytes_per_sample, 64.0 * 55 * 55 * 4);
  EXPECT_DOUBLE_EQ(m.layers[0].params, 11.0 * 11 * 3 * 64 + 64);
  EXPECT_DOUBLE_EQ(m.layers[5].params, 256.0 * 6 * 6 * 4096 + 4096);
}

TEST(ModelPresets, EveryArchitecturePresetIsWellFormed) {
  std::set<std::string> names;
  for (const ModelPreset& preset : model_presets()) {
    EXPECT_TRUE(names.insert(preset.name).second) << preset.name;
    EXPECT_FALSE(preset.description.empty()) << preset.name;
    if (preset.takes_widths) continue;
    const Model m = preset.build({});
    EXPECT_EQ(m.name, preset.name);
    std::set<std::string> layer_names;
    for (const Layer& l : m.layers) {
      EXPECT_TRUE(layer_names.insert(l.name).second) << preset.name << ": " << l.name;
      EXPECT_GT(l.params, 0) << l.name;
      EXPECT_GT(l.forward_flop_per_sample, 0) << l.name;
      EXPECT_GT(l.activation_bytes_per_sample, 0) << l.name;
    }
  }
  EXPECT_EQ(names.size(), 7u);
}

// Every preset layer is one GEMM per sample (the im2col product of a convolution, a dense layer's
// matrix-vector product): 2 rows n k is exactly its forward FLOP, k n its weights (the parameters
// less a bias or batch norm's gamma and beta per output), and its shapes are the architecture's.
TEST(ModelPresets, EveryLayerIsTheGemmItsShapeGives) {
  for (const ModelPreset& preset : model_presets()) {
    PresetOptions options;
    if (preset.takes_widths) options.widths = {784, 512, 10};
    const Model m = preset.build(options);
    for (const Layer& layer : m.layers) {
      ASSERT_TRUE(layer.gemm.known()) << m.name << " " << layer.name;
      const LayerGemm& g = layer.gemm;
      EXPECT_DOUBLE_EQ(2.0 * double(g.rows_per_sample) * double(g.n) * double(g.k),
                       layer.forward_flop_per_sample)
          << m.name << " " << layer.name;
      const double weights = double(g.k) * double(g.n);
      EXPECT_TRUE(layer.params == weights + double(g.n) || layer.params == weights + 2.0 * g.n)
          << m.name << " " << layer.name << ": " << layer.params << " parameters, " << weights
          << " weights";
    }
  }
  const Model resnet = build_preset("resnet50");
  const LayerGemm conv1 = resnet.layers.front().gemm;  // 7x7/2 from 3 channels to 64, 112x112
  EXPECT_EQ(conv1.rows_per_sample, 112 * 112);
  EXPECT_EQ(conv1.n, 64);
  EXPECT_EQ(conv1.k, 7 * 7 * 3);
  const LayerGemm fc = resnet.layers.back().gemm;
  EXPECT_EQ(fc.rows_per_sample, 1);
  EXPECT_EQ(fc.n, 1000);
  EXPECT_EQ(fc.k, 2048);
  const Model vgg = build_preset("vgg16");
  const LayerGemm fc6 = vgg.layers[vgg.layers.size() - 3].gemm;  // 512 x 7 x 7 flattened to 4096
  EXPECT_EQ(fc6.k, 512 * 7 * 7);
  EXPECT_EQ(fc6.n, 4096);
  const Model inception = build_preset("inception_v3");
  const LayerGemm first = inception.layers.front().gemm;  // 3x3/2 valid: 299 -> 149
  EXPECT_EQ(first.rows_per_sample, 149 * 149);
  EXPECT_EQ(first.k, 3 * 3 * 3);
  // A layer given by its totals has none.
  EXPECT_FALSE(Layer{}.gemm.known());
}

TEST(ModelPresets, UnknownPresetIsAbsent) {
  EXPECT_EQ(find_model_preset("resnet51"), nullptr);
}

TEST(ModelPresets, Fp16HalvesBytesButNotCounts) {
  const Model fp32 = build_preset("inception_v3");
  PresetOptions half;
  half.bytes_per_element = 2;
  const Model fp16 = build_preset("inception_v3", half);
  EXPECT_DOUBLE_EQ(fp16.bytes_per_param, 2);
  EXPECT_DOUBLE_EQ(fp16.bytes_per_activation_element, 2);
  EXPECT_DOUBLE_EQ(fp16.input_bytes_per_sample, fp32.input_bytes_per_sample / 2);
  EXPECT_DOUBLE_EQ(fp16.parameter_bytes(), fp32.parameter_bytes() / 2);
  ASSERT_EQ(fp16.layers.size(), fp32.layers.size());
  for (size_t i = 0; i < fp16.layers.size(); ++i) {
    EXPECT_DOUBLE_EQ(fp16.layers[i].params, fp32.layers[i].params);
    EXPECT_DOUBLE_EQ(fp16.layers[i].forward_flop_per_sample,
                     fp32.layers[i].forward_flop_per_sample);
    EXPECT_DOUBLE_EQ(fp16.layers[i].activation_bytes_per_sample,
                     fp32.layers[i].activation_bytes_per_sample / 2);
  }
}

// --- The scenario's "model" object ------------------------------------------------------------

Model parse(const nlohmann::json& model) {
  return parse_model(JsonCursor(model, "m.json", "/model"));
}

// Expects parse_model to fail at `path` with a message containing each of `needles`.
void expect_model_error(const nlohmann::json& model, const std::string& path,
                        const std::vector<std::string>& needles) {
  try {
    parse(model);
    ADD_FAILURE() << "expected an error at " << path;
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), "m.json");
    EXPECT_EQ(e.json_path(), path) << e.what();
    for (const std::string& needle : needles) {
      EXPECT_NE(e.message().find(needle), std::string::npos) << needle << " in " << e.what();
    }
  }
}

TEST(ModelScenario, MlpBuildsDenseLayersFromWidths) {
  const Model m = parse({{"preset", "mlp"}, {"widths", {784, 1024, 1024, 10}}});
  EXPECT_EQ(m.name, "mlp");
  ASSERT_EQ(m.layers.size(), 3u);
  EXPECT_EQ(m.layers[0].name, "fc1");
  EXPECT_EQ(m.layers[2].name, "fc3");
  EXPECT_DOUBLE_EQ(m.layers[0].params, 784.0 * 1024 + 1024);
  EXPECT_DOUBLE_EQ(m.layers[1].params, 1024.0 * 1024 + 1024);
  EXPECT_DOUBLE_EQ(m.layers[2].params, 1024.0 * 10 + 10);
  EXPECT_DOUBLE_EQ(m.layers[0].forward_flop_per_sample, 2.0 * 784 * 1024);
  EXPECT_DOUBLE_EQ(m.layers[2].activation_bytes_per_sample, 10.0 * 4);
  EXPECT_DOUBLE_EQ(m.input_bytes_per_sample, 784.0 * 4);

  const Model half =
      parse({{"preset", "mlp"}, {"widths", {784, 1024, 1024, 10}}, {"dtype", "fp16"}});
  EXPECT_DOUBLE_EQ(half.input_bytes_per_sample, 784.0 * 2);
  EXPECT_DOUBLE_EQ(half.layers[2].activation_bytes_per_sample, 10.0 * 2);
  EXPECT_DOUBLE_EQ(half.bytes_per_param, 2);
}

TEST(ModelScenario, DtypeDefaultsToFp32AndSetsElementBytes) {
  const Model fp32 = parse({{"preset", "resnet50"}});
  EXPECT_DOUBLE_EQ(fp32.bytes_per_param, 4);
  EXPECT_DOUBLE_EQ(fp32.bytes_per_activation_element, 4);
  EXPECT_EQ(parse({{"preset", "resnet50"}, {"dtype", "fp32"}}).input_bytes_per_sample,
            fp32.input_bytes_per_sample);
  const Model fp16 = parse({{"preset", "resnet50"}, {"dtype", "fp16"}});
  EXPECT_DOUBLE_EQ(fp16.bytes_per_param, 2);
  EXPECT_DOUBLE_EQ(fp16.input_bytes_per_sample, fp32.input_bytes_per_sample / 2);
  EXPECT_DOUBLE_EQ(fp16.layers.back().activation_bytes_per_sample, 2000);
  EXPECT_DOUBLE_EQ(fp16.total_params(), fp32.total_params());
}

TEST(ModelScenario, DtypeOnExplicitLayersSetsParamBytesOnly) {
  nlohmann::json model = test::one_layer_model(1000, "2 MFLOP", "64 B");
  model["dtype"] = "fp16";
  model["input_bytes_per_sample"] = "1 kB";
  const Model m = parse(model);
  EXPECT_DOUBLE_EQ(m.bytes_per_param, 2);
  EXPECT_DOUBLE_EQ(m.bytes_per_activation_element, 2);
  EXPECT_DOUBLE_EQ(m.layers[0].activation_bytes_per_sample, 64);  // as given
  EXPECT_DOUBLE_EQ(m.input_bytes_per_sample, 1000);               // as given
  EXPECT_DOUBLE_EQ(m.parameter_bytes(), 2000);
}

// The default loss cost counts logits from the last activation's bytes and the element size.
TEST(ModelScenario, DefaultLossCountsLogitsWithTheDtype) {
  const std::vector<nlohmann::json> machines = {
      test::machine("pc1", "400 GFLOPS", {"10 TFLOPS"}, "10 Gbps")};
  const nlohmann::json training = {{"replicas", {"pc1/gpu0"}}};
  for (const char* dtype : {"fp32", "fp16"}) {
    const Scenario s = parse_scenario(
        test::scenario_json(machines, {{"preset", "resnet50"}, {"dtype", dtype}}, training),
        "s.json");
    EXPECT_DOUBLE_EQ(s.training.costs.loss_flop_per_sample, 5.0 * 1000) << dtype;
  }
  nlohmann::json custom = test::one_layer_model(1000, "2 MFLOP", "64 B");
  custom["dtype"] = "fp16";
  const Scenario s = parse_scenario(test::scenario_json(machines, custom, training), "s.json");
  EXPECT_DOUBLE_EQ(s.training.costs.loss_flop_per_sample, 5.0 * 32);
}

TEST(ModelScenario, UnknownPresetListsEveryValidName) {
  std::vector<std::string> needles = {"unknown preset \"resnet51\""};
  for (const ModelPreset& p : model_presets()) needles.push_back(p.name);
  for (const char* name : {"resnet101", "resnet152", "inception_v3", "vgg16", "alexnet", "mlp"}) {
    needles.push_back(name);
  }
  expect_model_error({{"preset", "resnet51"}}, "/model/preset", needles);
}

TEST(ModelScenario, WidthsOnlyForMlp) {
  expect_model_error({{"preset", "resnet50"}, {"widths", {784, 10}}}, "/model/widths",
                     {"only these presets take widths: mlp"});
  nlohmann::json custom = test::one_layer_model(1000, "2 MFLOP");
  custom["widths"] = {784, 10};
  expect_model_error(custom, "/model/widths", {"only these presets take widths: mlp"});
  expect_model_error({{"preset", "mlp"}}, "/model/widths", {"required field missing"});
}

TEST(ModelScenario, BadWidthsAreRejected) {
  expect_model_error({{"preset", "mlp"}, {"widths", {784}}}, "/model/widths",
                     {"at least 2 widths"});
  expect_model_error({{"preset", "mlp"}, {"widths", nlohmann::json::array()}}, "/model/widths",
                     {"at least 2 widths"});
  expect_model_error({{"preset", "mlp"}, {"widths", {784, 0}}}, "/model/widths/1", {"[1, "});
  expect_model_error({{"preset", "mlp"}, {"widths", {-784, 10}}}, "/model/widths/0", {"[1, "});
  expect_model_error({{"preset", "mlp"}, {"widths", {784, 10.5}}}, "/model/widths/1", {"integer"});
  expect_model_error({{"preset", "mlp"}, {"widths", {784, "10"}}}, "/model/widths/1", {"integer"});
  expect_model_error({{"preset", "mlp"}, {"widths", 784}}, "/model/widths", {"array"});
}

TEST(ModelScenario, UnknownDtypeListsValidOnes) {
  expect_model_error({{"preset", "resnet50"}, {"dtype", "bf16"}}, "/model/dtype",
                     {"unknown dtype \"bf16\"", "fp32", "fp16"});
  nlohmann::json custom = test::one_layer_model(1000, "2 MFLOP");
  custom["dtype"] = "int8";
  expect_model_error(custom, "/model/dtype", {"valid dtypes: fp32, fp16"});
  expect_model_error({{"preset", "resnet50"}, {"dtype", 16}}, "/model/dtype",
                     {"expected a string"});
}

}  // namespace
}  // namespace replisim::core
