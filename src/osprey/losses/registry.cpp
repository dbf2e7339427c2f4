#include "osprey/losses/registry.h"

#include <fmt/format.h>

namespace osprey::losses {

const std::vector<std::string>& loss_names() {
  static const std::vector<std::string> names = {"sparse_categorical_crossentropy",
                                                 "categorical_crossentropy",
                                                 "binary_crossentropy",
                                                 "mean_squared_error",
                                                 "mse",
                                                 "mean_absolute_error",
                                                 "mae",
                                                 "huber",
                                                 "huber_loss"};
  return names;
}

std::unique_ptr<Loss> get(std::string_view name) {
  if (name == "sparse_categorical_crossentropy")
    return std::make_unique<SparseCategoricalCrossentropy>();
  if (name == "categorical_crossentropy") return std::make_unique<CategoricalCrossentropy>();
  if (name == "binary_crossentropy") return std::make_unique<BinaryCrossentropy>();
  if (name == "mean_squared_error" || name == "mse") return std::make_unique<MeanSquaredError>();
  if (name == "mean_absolute_error" || name == "mae") return std::make_unique<MeanAbsoluteError>();
  if (name == "huber" || name == "huber_loss") return std::make_unique<Huber>();
  OSPREY_THROW(ValueError, "Unknown loss: '{}'. Valid names: {}", name,
               fmt::join(loss_names(), ", "));
}

namespace {
template <class T>
T field(const nlohmann::json& c, const char* key, T fallback, std::string_view cls) {
  if (!c.contains(key) || c[key].is_null()) return fallback;
  try {
    return c[key].get<T>();
  } catch (const nlohmann::json::exception& e) {
    OSPREY_THROW(ValueError, "{}: config field '{}' is malformed ({}). Received: {}", cls, key,
                 e.what(), c[key].dump());
  }
}
}  // namespace

std::unique_ptr<Loss> from_config(std::string_view cls, const nlohmann::json& c) {
  OSPREY_CHECK(c.is_object(), "{}: a loss config must be a JSON object. Received: {}", cls,
               c.dump());
  const std::string reduction = field<std::string>(c, "reduction", "sum_over_batch_size", cls);
  const std::string name = field<std::string>(c, "name", "", cls);
  const bool from_logits = field<bool>(c, "from_logits", false, cls);
  const double smoothing = field<double>(c, "label_smoothing", 0.0, cls);
  if (cls == "SparseCategoricalCrossentropy") {
    SparseCategoricalCrossentropyOptions o{.from_logits = from_logits,
                                           .ignore_class = std::nullopt,
                                           .reduction = reduction,
                                           .name = name};
    if (c.contains("ignore_class") && !c["ignore_class"].is_null())
      o.ignore_class = field<int64_t>(c, "ignore_class", 0, cls);
    return std::make_unique<SparseCategoricalCrossentropy>(o);
  }
  if (cls == "CategoricalCrossentropy") {
    return std::make_unique<CategoricalCrossentropy>(
        CategoricalCrossentropyOptions{.from_logits = from_logits,
                                       .label_smoothing = smoothing,
                                       .reduction = reduction,
                                       .name = name});
  }
  if (cls == "BinaryCrossentropy") {
    return std::make_unique<BinaryCrossentropy>(
        BinaryCrossentropyOptions{.from_logits = from_logits,
                                  .label_smoothing = smoothing,
                                  .reduction = reduction,
                                  .name = name});
  }
  if (cls == "MeanSquaredError")
    return std::make_unique<MeanSquaredError>(RegressionLossOptions{reduction, name});
  if (cls == "MeanAbsoluteError")
    return std::make_unique<MeanAbsoluteError>(RegressionLossOptions{reduction, name});
  if (cls == "Huber") {
    return std::make_unique<Huber>(
        HuberOptions{field<double>(c, "delta", 1.0, cls), reduction, name});
  }
  OSPREY_THROW(ValueError,
               "Unknown loss class: '{}'. Valid classes: SparseCategoricalCrossentropy, "
               "CategoricalCrossentropy, "
               "BinaryCrossentropy, MeanSquaredError, MeanAbsoluteError, Huber",
               cls);
}

}  // namespace osprey::losses
