#include <osprey/nn/layers/options.h>
#include <osprey/osprey.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
namespace os = osprey;
using os::autograd::Variable;

// y = x · w + b, the Keras guide's Linear layer: weights made in build, used in call.
class Linear : public os::nn::SingleInputLayer {
 public:
  explicit Linear(int64_t units, os::nn::LayerOptions options = {})
      : SingleInputLayer("Linear", options), units_(units) {}

  nlohmann::json get_config() const override {
    nlohmann::json config = Layer::get_config();  // name, trainable, dtype
    config["units"] = units_;
    return config;
  }
  static std::shared_ptr<os::nn::Layer> from_config(const nlohmann::json& config) {
    os::nn::LayerOptions options;
    os::nn::read_base_options(config, options);
    return std::make_shared<Linear>(config.at("units").get<int64_t>(), options);
  }

 protected:
  void build_single(const os::Shape& input_shape) override {  // [batch, in]
    w_ = add_weight("kernel", {input_shape.at(-1), units_}, "random_normal");
    b_ = add_weight("bias", {units_}, "zeros");
  }
  Variable call_single(const Variable& x, bool training) override {
    return os::autograd::matmul(x, autocast(w_)) + autocast(b_);
  }

 private:
  int64_t units_;
  Variable w_, b_;
};

int main() {
  os::nn::register_layer("Linear", &Linear::from_config);  // so load_model can rebuild it

  // On its own: the first call builds the weights; check y against x · w + b by hand.
  auto linear = os::nn::make_layer<Linear>(2);
  Variable x(os::from_vector<float>({1, 2, 3}, {1, 3}));
  Variable y = linear(x);
  const os::Tensor w = linear->variables()[0].value(), b = linear->variables()[1].value();
  double worst = 0;
  for (int64_t j = 0; j < 2; ++j) {
    const double by_hand = 1 * w.at({0, j}) + 2 * w.at({1, j}) + 3 * w.at({2, j}) + b.at({j});
    worst = std::max(worst, std::abs(y.value().at({0, j}) - by_hand));
  }
  std::printf("%s: %s, largest difference from x · w + b: %g\n", linear->name().c_str(),
              y.value().to_string().c_str(), worst);

  // In a model: fit trains it, save writes its config, load_model rebuilds it from there.
  os::set_global_seed(1);
  auto data = os::datasets::fashion_mnist::load({.flatten = true});
  auto train = data.train.slice(0, 6000), test = data.test.slice(0, 2000);
  auto model = os::Sequential({os::nn::make_layer<Linear>(64), os::layers::Activation("relu"),
                               os::layers::Dense(10, "softmax")});
  model.compile("adam", "sparse_categorical_crossentropy", {"accuracy"});
  model.fit(train.x, train.y, {.batch_size = 128, .epochs = 5, .verbose = 0});
  model.save("linear_mlp");
  auto reloaded = os::load_model("linear_mlp");
  const double accuracy = model.evaluate(test.x, test.y).at("accuracy");
  const bool same =
      model.predict(test.x).to_vector<float>() == reloaded.predict(test.x).to_vector<float>();
  std::printf("test accuracy %.4f; the reloaded model predicts %s\n", accuracy,
              same ? "the same" : "otherwise");
  const bool ok = worst < 1e-6 && accuracy > 0.75 && same;
  std::printf("%s\n", ok ? "the custom layer computes, trains and reloads" : "FAILED");
  return ok ? 0 : 1;
}
