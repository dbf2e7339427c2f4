// ModelParallel against single-device training: the same global batches from the same initial
// weights must give the same weights after 10 steps (1e-5), for column, row and 2-D (batch x
// model) layouts of an MLP, a CNN and an embedding model; plus the errors, the lint and the
// memory report, pinned.
#include "osprey/distribute/model_parallel/model_parallel.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "osprey/distribute/distribution.h"
#include "osprey/distribute/strategy_fixture.h"
#include "osprey/distribute/weights_difference.h"
#include "osprey/nn/layers/all.h"
#include "osprey/tensor/factory.h"
#include "osprey/tensor/ops.h"
#include "osprey/train/model.h"
#include "osprey/train/trainer.h"

namespace osprey::distribute {
namespace {

using testing::data_x;
using testing::data_y;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::initial_weights;
using testing::make_cnn;
using testing::make_mlp;
using testing::max_abs_difference;
using testing::max_relative_difference;

using StrategyPtr = std::shared_ptr<const train::Strategy>;

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

Model train_mlp(const StrategyPtr& strategy, const std::string& optimizer) {
  return testing::train_steps(strategy, optimizer, 10);
}

std::shared_ptr<ModelParallel> model_parallel(const LayoutMap& layout,
                                              const std::string& batch = "") {
  return std::make_shared<ModelParallel>(layout, batch);
}

// The MLP is sequential/dense (5 -> 16, relu), dense_1 (16 -> 8, tanh), dense_2 (8 -> 3).
TEST(ModelParallelTest, MlpMatchesOneDeviceForColumnRowAnd2DLayouts) {
  for (const std::string opt : {"sgd", "adam"}) {
    const Model one = train_mlp(nullptr, opt);
    ASSERT_GT(max_abs_difference(one.get_weights(), initial_weights()), 1e-3) << opt;

    LayoutMap column(DeviceMesh({2}, {"model"}));
    column["sequential/dense(_1)?/kernel"] = {std::nullopt, "model"};
    column["sequential/dense(_1)?/bias"] = {"model"};

    LayoutMap row(DeviceMesh({2}, {"model"}));
    row["sequential/dense_[12]/kernel"] = {"model", std::nullopt};

    // Megatron's pair (column then row) with a replicated bias on the column layer, on a 2x2
    // mesh: the batch split over "data" as well.
    LayoutMap two_d(DeviceMesh({2, 2}, {"data", "model"}));
    two_d["sequential/dense/kernel"] = {std::nullopt, "model"};
    two_d["sequential/dense_1/kernel"] = {"model", std::nullopt};
    two_d["sequential/dense_1/bias"] = {"model"};

    for (const auto& [name, layout, batch] :
         {std::tuple{"column", column, ""}, std::tuple{"row", row, ""},
          std::tuple{"2-D", two_d, "data"}}) {
      auto mp = model_parallel(layout, batch);
      const Model m = train_mlp(mp, opt);
      EXPECT_EQ(m.trainer().strategy().name(), "ModelParallel");
      EXPECT_LE(max_relative_difference(m.get_weights(), one.get_weights()), 1e-5)
          << opt << " " << name;
    }
  }
}

TEST(ModelParallelTest, ColumnLayersThatFeedRowLayersLeaveTheirOutputSplit) {
  Model m = make_mlp();
  LayoutMap layout(DeviceMesh({2}, {"model"}));
  layout["sequential/dense/kernel"] = {std::nullopt, "model"};
  layout["sequential/dense_1/kernel"] = {"model", std::nullopt};
  layout["sequential/dense_2/kernel"] = {std::nullopt, "model"};  // 3 outputs: cannot split
  ModelParallel mp(layout);
  EXPECT_EQ(error_of([&] { (void)mp.plan(m.network()); }),
            "LayoutMap: 'sequential/dense_2/kernel' (shape [8, 3]): dimension 1 of size 3 cannot "
            "be split evenly over mesh axis 'model' of size 2");
  LayoutMap ok(DeviceMesh({2}, {"model"}));
  ok["sequential/dense/kernel"] = {std::nullopt, "model"};
  ok["sequential/dense_1/kernel"] = {"model", std::nullopt};
  const auto plans = ModelParallel(ok).plan(m.network());
  ASSERT_EQ(plans.size(), 2U);
  EXPECT_EQ(plans[0].layer, "dense");
  EXPECT_EQ(plans[0].plan.mode, ShardMode::column);
  EXPECT_TRUE(plans[0].plan.output_split);
  EXPECT_EQ(plans[1].plan.mode, ShardMode::row);
  EXPECT_TRUE(plans[1].plan.input_split);
}

TEST(ModelParallelTest, CnnMatchesOneDeviceForColumnRowAnd2DLayouts) {
  const Tensor x = random_normal({40, 6, 6, 2}, {.seed = 21});
  const Tensor y = random_normal({40, 3}, {.seed = 22});
  const std::vector<Tensor> init = make_cnn().get_weights();
  auto train = [&](const StrategyPtr& strategy) {
    Model m = make_cnn();
    m.set_weights(init);
    m.compile("adam", "mse", {}, {.strategy = strategy});
    m.fit(x, y, {.batch_size = 4, .epochs = 1, .verbose = 0, .shuffle = false});  // 10 steps
    return m;
  };
  const Model one = train(nullptr);
  ASSERT_GT(max_abs_difference(one.get_weights(), init), 1e-3);

  LayoutMap column(DeviceMesh({2}, {"model"}));
  column["sequential/conv2d/kernel"] = {std::nullopt, std::nullopt, std::nullopt, "model"};
  column["sequential/conv2d/bias"] = {"model"};
  LayoutMap row(DeviceMesh({2}, {"model"}));
  row["sequential/conv2d_1/kernel"] = {std::nullopt, std::nullopt, "model", std::nullopt};
  row["sequential/dense/kernel"] = {"model", std::nullopt};
  LayoutMap two_d(DeviceMesh({2, 2}, {"batch", "model"}));
  two_d["sequential/conv2d/kernel"] = {std::nullopt, std::nullopt, std::nullopt, "model"};
  two_d["sequential/conv2d_1/kernel"] = {std::nullopt, std::nullopt, "model", std::nullopt};
  two_d["sequential/dense/kernel"] = {std::nullopt, "model"};  // 3 outputs: indivisible
  EXPECT_THAT(error_of([&] { train(model_parallel(two_d, "batch")); }),
              HasSubstr("dimension 1 of size 3 cannot be split evenly"));
  LayoutMap two_d_ok(DeviceMesh({2, 2}, {"batch", "model"}));
  two_d_ok["sequential/conv2d/kernel"] = {std::nullopt, std::nullopt, std::nullopt, "model"};
  two_d_ok["sequential/conv2d_1/kernel"] = {std::nullopt, std::nullopt, "model", std::nullopt};
  for (const auto& [name, layout, batch] :
       {std::tuple{"column", column, ""}, std::tuple{"row", row, ""},
        std::tuple{"2-D", two_d_ok, "batch"}}) {
    const Model m = train(model_parallel(layout, batch));
    EXPECT_LE(max_relative_difference(m.get_weights(), one.get_weights()), 1e-5) << name;
  }
}

TEST(ModelParallelTest, EmbeddingSplitByVocabularyOrByDimensionMatchesOneDevice) {
  auto make = [] {
    nn::clear_session();
    return Sequential({layers::Embedding(12, 6), layers::Flatten(), layers::Dense(2)},
                      {.input_shape = {3}});
  };
  Tensor ids = Tensor::empty({40, 3}, {DType::float32});
  for (int64_t i = 0; i < ids.numel(); ++i) ids.data<float>()[i] = static_cast<float>(i * 7 % 12);
  const Tensor y = random_normal({40, 2}, {.seed = 31});
  const std::vector<Tensor> init = make().get_weights();
  auto train = [&](const StrategyPtr& strategy) {
    Model m = make();
    m.set_weights(init);
    m.compile("adam", "mse", {}, {.strategy = strategy});
    m.fit(ids, y, {.batch_size = 4, .epochs = 1, .verbose = 0, .shuffle = false});
    return m;
  };
  const Model one = train(nullptr);
  for (const bool by_vocabulary : {true, false}) {
    LayoutMap layout(DeviceMesh({2, 2}, {"data", "model"}));
    layout[".*/embeddings"] =
        by_vocabulary ? TensorLayout{"model", std::nullopt} : TensorLayout{std::nullopt, "model"};
    const Model m = train(model_parallel(layout, "data"));
    EXPECT_LE(max_relative_difference(m.get_weights(), one.get_weights()), 1e-5)
        << (by_vocabulary ? "vocabulary" : "dimension");
  }
}

TEST(ModelParallelTest, ACheckpointSavedUnderOneLayoutLoadsUnderAnother) {
  const auto dir = std::filesystem::temp_directory_path() / "osprey_mp_checkpoint_test";
  std::filesystem::remove_all(dir);
  LayoutMap column(DeviceMesh({2}, {"model"}));
  column["sequential/dense(_1)?/kernel"] = {std::nullopt, "model"};
  Model trained = train_mlp(model_parallel(column), "adam");
  trained.save(dir.string());
  const Tensor x = data_x().narrow(0, 80, 80);
  const Tensor expected = trained.predict(x, {.batch_size = 16});

  LayoutMap row(DeviceMesh({2, 2}, {"data", "model"}));
  row["sequential/dense_[12]/kernel"] = {"model", std::nullopt};
  Model loaded = load_model(dir.string());
  loaded.compile("adam", "mse", {}, {.strategy = model_parallel(row, "data")});
  loaded.load_optimizer_state(dir.string());
  const Tensor got = loaded.predict(x, {.batch_size = 16});
  EXPECT_LE(max_abs_difference({got}, {expected}), 1e-6);
  // And the whole optimizer state travelled: one more epoch under the new layout equals one
  // more epoch of the single-device model from the same checkpoint.
  Model single = load_model(dir.string());
  single.compile("adam", "mse");
  single.load_optimizer_state(dir.string());
  for (Model* m : {&loaded, &single}) {
    m->fit(data_x().narrow(0, 0, 80), data_y().narrow(0, 0, 80),
           {.batch_size = 8, .epochs = 1, .verbose = 0, .shuffle = false});
  }
  EXPECT_LE(max_relative_difference(loaded.get_weights(), single.get_weights()), 1e-5);
  std::filesystem::remove_all(dir);
}

TEST(ModelParallelTest, SplitsThatCannotRunAreErrorsNamingTheVariable) {
  nn::clear_session();
  Model m = Sequential({layers::Dense(4), layers::LayerNormalization(), layers::Dense(2)},
                       {.input_shape = {4}});
  LayoutMap norm(DeviceMesh({2}, {"model"}));
  norm[".*/gamma"] = {"model"};
  EXPECT_EQ(error_of([&] { (void)ModelParallel(norm).plan(m.network()); }),
            "ModelParallel: 'sequential/layer_normalization/gamma' has a split layout, but its "
            "layer 'layer_normalization' is a LayerNormalization; osprey splits the kernels and "
            "biases of Dense, Conv2D and Embedding layers");
  LayoutMap batch(DeviceMesh({2, 2}, {"data", "model"}));
  batch["sequential/dense/kernel"] = {"data", "model"};
  EXPECT_EQ(error_of([&] { (void)ModelParallel(batch, "data").plan(m.network()); }),
            "ModelParallel: the layout ('data', 'model') of 'sequential/dense/kernel' splits it "
            "over the batch axis 'data'; osprey splits variables over the model axis 'model' only");
  EXPECT_EQ(error_of([] {
              ModelParallel(LayoutMap(DeviceMesh({2, 2, 2}, {"d", "x", "y"})), "d");
            }),
            "ModelParallel: DeviceMesh({2, 2, 2}, {d, x, y}) has 2 axes besides the batch axis "
            "'d' (x, y); osprey splits variables over one model axis");
  EXPECT_EQ(error_of([] { ModelParallel(LayoutMap(DeviceMesh({2}, {"model"})), "data"); }),
            "DeviceMesh: no axis 'data' in DeviceMesh({2}, {model})");
}

TEST(ModelParallelTest, TheLintListsTheVariablesNoRuleMatched) {
  Model m = make_mlp();
  LayoutMap layout(DeviceMesh({2}, {"model"}));
  layout["sequential/dense.*/kernel"] = {std::nullopt, "model"};
  EXPECT_THAT(
      ModelParallel(layout).unmatched_variables(m.network()),
      ElementsAre("sequential/dense/bias", "sequential/dense_1/bias", "sequential/dense_2/bias"));
}

TEST(ModelParallelTest, TheMemoryReportCountsEachDevicesShards) {
  nn::clear_session();
  Model m = Sequential({layers::Dense(512, "relu"), layers::Dense(256, "relu"), layers::Dense(10)},
                       {.input_shape = {784}});
  LayoutMap layout(DeviceMesh({2, 4}, {"data", "model"}));
  layout["sequential/dense/kernel"] = {std::nullopt, "model"};
  layout["sequential/dense/bias"] = {"model"};
  layout["sequential/dense_1/kernel"] = {"model", std::nullopt};
  const MemoryReport r = ModelParallel(layout, "data").memory_report(m.network(), 64, 2);
  ASSERT_EQ(r.devices.size(), 8U);
  // dense: 784 x 512 / 4 + 512 / 4; dense_1: 512 x 256 / 4 + 256 (bias whole); dense_2 whole.
  const int64_t params = (784 * 128 + 128 + 128 * 256 + 256 + 256 * 10 + 10) * 4;
  EXPECT_EQ(r.devices[5].parameters, params);
  EXPECT_EQ(r.devices[5].gradients, params);
  EXPECT_EQ(r.devices[5].optimizer_slots, 2 * params);
  // 32 rows per device: dense's output stays split (its quarter), dense_1's partial sums and
  // its output, dense_2's output.
  EXPECT_EQ(r.devices[5].activations, 32 * (512 / 4 + 256 + 256 + 10) * 4);
  EXPECT_EQ(r.to_string().substr(0, r.to_string().find('\n', 80) + 1),
            "device       parameters    gradients    optimizer  activations        total\n"
            "cpu:0         531.5 KiB    531.5 KiB     1.04 MiB     81.2 KiB     2.16 MiB\n");
}

TEST(ModelParallelTest, SetDistributionAndShardingUseTheKerasSpelling) {
  LayoutMap layout(distribution::DeviceMesh({2}, {"model"}));
  layout["sequential/dense/kernel"] = {std::nullopt, "model"};
  distribution::set_distribution(distribution::ModelParallel(layout));
  Model m = make_mlp();
  m.compile("sgd", "mse");
  m.fit(data_x().narrow(0, 0, 16), data_y().narrow(0, 0, 16),
        {.batch_size = 8, .epochs = 1, .verbose = 0});
  EXPECT_EQ(m.trainer().strategy().name(), "ModelParallel");
  EXPECT_EQ(distribution::sharding(m.network().variables()[0]),
            "sequential/dense/kernel [5, 16] (None, 'model') on DeviceMesh({2}, {model})\n"
            "+-------------+-------------+\n"
            "| [0:5, 0:8]  | [0:5, 8:16] |\n"
            "| cpu:0       | cpu:1       |\n"
            "+-------------+-------------+\n");
  distribution::set_distribution(std::nullopt);
  EXPECT_EQ(distribution::sharding(m.network().variables()[0]),
            "sequential/dense/kernel [5, 16] replicated (no ModelParallel distribution is set)\n");
}

TEST(ModelParallelTest, SuggestLayoutPairsLargeDenseLayersAndKeepsSmallOnesWhole) {
  nn::clear_session();
  Model m = Sequential({layers::Dense(512, "relu"), layers::Dense(256, "relu"), layers::Dense(10)},
                       {.input_shape = {784}});
  // Under the Keras spelling the docs use (os::distribution), as the free function is.
  const LayoutMap layout = distribution::suggest_layout(
      m.network(), distribution::DeviceMesh({2, 4}, {"data", "model"}), "data");
  EXPECT_THAT(layout.keys(), ElementsAre("sequential/dense/kernel", "sequential/dense/bias",
                                         "sequential/dense_1/kernel"));
  EXPECT_EQ(layout.lookup("sequential/dense/kernel")->to_string(), "(None, 'model')");
  EXPECT_EQ(layout.lookup("sequential/dense_1/kernel")->to_string(), "('model', None)");
  // And it runs: the suggested layout trains like one device.
  const auto plans = ModelParallel(layout, "data").plan(m.network());
  EXPECT_TRUE(plans[0].plan.output_split);
}

}  // namespace
}  // namespace osprey::distribute
