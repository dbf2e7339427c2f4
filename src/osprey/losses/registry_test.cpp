// losses::get by Keras name, get_config's Keras field names, and from_config round trips.
#include "osprey/losses/registry.h"

#include <gtest/gtest.h>

namespace osprey::losses {
namespace {

TEST(LossRegistryTest, NamesGiveTheirKerasClasses) {
  const std::vector<std::pair<std::string, std::string>> want = {
      {"sparse_categorical_crossentropy", "SparseCategoricalCrossentropy"},
      {"categorical_crossentropy", "CategoricalCrossentropy"},
      {"binary_crossentropy", "BinaryCrossentropy"},
      {"mse", "MeanSquaredError"},
      {"mean_squared_error", "MeanSquaredError"},
      {"mae", "MeanAbsoluteError"},
      {"mean_absolute_error", "MeanAbsoluteError"},
      {"huber", "Huber"}};
  for (const auto& [name, cls] : want) EXPECT_STREQ(get(name)->class_name(), cls.c_str()) << name;
  EXPECT_EQ(get("mse")->name(), "mean_squared_error");
  EXPECT_EQ(get("huber")->name(), "huber_loss");
}

TEST(LossRegistryTest, UnknownNameListsTheValidOnes) {
  try {
    get("crossentropy");
    ADD_FAILURE() << "no error";
  } catch (const ValueError& e) {
    EXPECT_STREQ(e.what(),
                 "Unknown loss: 'crossentropy'. Valid names: sparse_categorical_crossentropy, "
                 "categorical_crossentropy, binary_crossentropy, mean_squared_error, mse, "
                 "mean_absolute_error, mae, "
                 "huber, huber_loss");
  }
}

TEST(LossRegistryTest, ConfigsUseKerasFieldNames) {
  EXPECT_EQ(SparseCategoricalCrossentropy({.from_logits = true, .ignore_class = 255}).get_config(),
            nlohmann::json::parse(
                R"({"name": "sparse_categorical_crossentropy", "reduction": "sum_over_batch_size",
                                      "from_logits": true, "ignore_class": 255})"));
  EXPECT_EQ(SparseCategoricalCrossentropy().get_config()["ignore_class"], nullptr);
  EXPECT_EQ(CategoricalCrossentropy({.label_smoothing = 0.1, .reduction = "sum"}).get_config(),
            nlohmann::json::parse(
                R"({"name": "categorical_crossentropy", "reduction": "sum", "from_logits": false,
                                      "label_smoothing": 0.1, "axis": -1})"));
  EXPECT_EQ(BinaryCrossentropy({.from_logits = true}).get_config()["name"], "binary_crossentropy");
  EXPECT_EQ(Huber({.delta = 2.0}).get_config(),
            nlohmann::json::parse(
                R"({"name": "huber_loss", "reduction": "sum_over_batch_size", "delta": 2.0})"));
  EXPECT_EQ(MeanAbsoluteError({.name = "l1"}).get_config(),
            nlohmann::json::parse(R"({"name": "l1", "reduction": "sum_over_batch_size"})"));
}

TEST(LossRegistryTest, FromConfigRebuildsEveryLoss) {
  std::vector<std::unique_ptr<Loss>> all;
  all.push_back(
      std::make_unique<SparseCategoricalCrossentropy>(SparseCategoricalCrossentropyOptions{
          .from_logits = true, .ignore_class = -1, .reduction = "sum"}));
  all.push_back(std::make_unique<CategoricalCrossentropy>(
      CategoricalCrossentropyOptions{.label_smoothing = 0.2}));
  all.push_back(
      std::make_unique<BinaryCrossentropy>(BinaryCrossentropyOptions{.from_logits = true}));
  all.push_back(std::make_unique<MeanSquaredError>(RegressionLossOptions{.reduction = "none"}));
  all.push_back(std::make_unique<MeanAbsoluteError>());
  all.push_back(std::make_unique<Huber>(HuberOptions{.delta = 0.5}));
  for (const auto& l : all) {
    const auto back = from_config(l->class_name(), l->get_config());
    EXPECT_STREQ(back->class_name(), l->class_name());
    EXPECT_EQ(back->get_config(), l->get_config()) << l->class_name();
  }
  try {
    from_config("Huber", nlohmann::json::parse(R"({"delta": "big"})"));
    ADD_FAILURE() << "no error";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("Huber: config field 'delta' is malformed"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace osprey::losses
