// metrics::get by Keras name, and the resolution of "accuracy" from the loss or the shapes.
#include "osprey/metrics/registry.h"

#include <gtest/gtest.h>

#include "osprey/tensor/factory.h"

namespace osprey::metrics {
namespace {

TEST(MetricRegistryTest, NamesGiveTheirClassesAndKeepTheNameAskedFor) {
  const std::vector<std::pair<std::string, std::string>> want = {
      {"sparse_categorical_accuracy", "SparseCategoricalAccuracy"},
      {"categorical_accuracy", "CategoricalAccuracy"},
      {"binary_accuracy", "BinaryAccuracy"},
      {"top_k_categorical_accuracy", "TopKCategoricalAccuracy"},
      {"sparse_top_k_categorical_accuracy", "SparseTopKCategoricalAccuracy"},
      {"mae", "MeanAbsoluteError"},
      {"mean_squared_error", "MeanSquaredError"},
      {"auc", "AUC"}};
  for (const auto& [name, cls] : want) {
    const auto m = get(name);
    EXPECT_STREQ(m->class_name(), cls.c_str()) << name;
    EXPECT_EQ(m->name(), name);
  }
}

TEST(MetricRegistryTest, AccuracyFollowsTheLoss) {
  EXPECT_STREQ(get("accuracy", "sparse_categorical_crossentropy")->class_name(),
               "SparseCategoricalAccuracy");
  EXPECT_STREQ(get("acc", "CategoricalCrossentropy")->class_name(), "CategoricalAccuracy");
  const auto binary = get("accuracy", "binary_crossentropy");
  EXPECT_STREQ(binary->class_name(), "BinaryAccuracy");
  EXPECT_EQ(binary->name(), "accuracy");
  EXPECT_STREQ(get("accuracy", "mse")->class_name(), "InferredAccuracy");
}

TEST(MetricRegistryTest, AccuracyIsInferredFromTheFirstBatchsShapesAsKeras) {
  EXPECT_EQ(accuracy_for_shapes({8}, {8, 10}), "sparse_categorical_accuracy");
  EXPECT_EQ(accuracy_for_shapes({8, 1}, {8, 10}), "sparse_categorical_accuracy");
  EXPECT_EQ(accuracy_for_shapes({8, 10}, {8, 10}), "categorical_accuracy");
  EXPECT_EQ(accuracy_for_shapes({8, 1}, {8, 1}), "binary_accuracy");
  EXPECT_EQ(accuracy_for_shapes({8}, {8}), "binary_accuracy");
  auto acc = get("accuracy");
  acc->update_state(from_vector<int64_t>({1, 0}),
                    from_vector<float>({0.2f, 0.8f, 0.3f, 0.7f}, {2, 2}));
  EXPECT_DOUBLE_EQ(acc->result(), 0.5);
  const auto* inferred = dynamic_cast<const InferredAccuracy*>(acc.get());
  ASSERT_NE(inferred, nullptr);
  EXPECT_STREQ(inferred->resolved()->class_name(), "SparseCategoricalAccuracy");
  acc->reset_state();
  EXPECT_EQ(acc->result(), 0.0);
}

TEST(MetricRegistryTest, UnknownNameListsTheValidOnes) {
  try {
    get("precision");
    ADD_FAILURE() << "no error";
  } catch (const ValueError& e) {
    EXPECT_STREQ(
        e.what(),
        "Unknown metric: 'precision'. Valid names: accuracy, acc, sparse_categorical_accuracy, "
        "categorical_accuracy, binary_accuracy, top_k_categorical_accuracy, "
        "sparse_top_k_categorical_accuracy, mean_absolute_error, mae, mean_squared_error, mse, "
        "auc");
  }
}

TEST(MetricRegistryTest, ConfigsUseKerasFieldNames) {
  EXPECT_EQ(get("auc")->get_config(),
            nlohmann::json::parse(
                R"({"name": "auc", "dtype": "float32", "num_thresholds": 200, "curve": "ROC",
                                      "summation_method": "interpolation", "multi_label": false,
                                      "from_logits": false})"));
  EXPECT_EQ(get("sparse_top_k_categorical_accuracy")->get_config()["k"], 5);
}

}  // namespace
}  // namespace osprey::metrics
