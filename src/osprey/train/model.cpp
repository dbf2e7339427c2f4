#include "osprey/train/model.h"

#include <fmt/ranges.h>

#include "osprey/autograd/grad_mode.h"
#include "osprey/core/rng.h"
#include "osprey/io/json.h"
#include "osprey/models/saving.h"
#include "osprey/optim/loss_scale_optimizer.h"
#include "osprey/quant/quantize.h"
#include "osprey/tensor/ops.h"
#include "osprey/train/chief_writes.h"
#include "osprey/train/trainer.h"

namespace osprey::train {

std::shared_ptr<optim::Optimizer> OptimizerArg::resolve() const {
  return optimizer ? optimizer : std::shared_ptr<optim::Optimizer>(optim::get(name));
}

std::shared_ptr<losses::Loss> LossArg::resolve() const {
  return loss ? loss : std::shared_ptr<losses::Loss>(losses::get(name));
}

Model::Model(std::shared_ptr<models::Network> network) : network_(std::move(network)) {
  OSPREY_CHECK(network_ != nullptr, "Model: the network is null");
}

models::Network& Model::network() const {
  OSPREY_CHECK(network_ != nullptr, "Model: this model is empty; assign a built model to it first");
  return *network_;
}

void Model::compile(OptimizerArg optimizer, LossArg loss, std::vector<MetricArg> metrics,
                    CompileOptions options) {
  auto opt = optimizer.resolve();
  // Keras: a mixed_float16 model gets dynamic loss scaling unless it has some already (a
  // LossScaleOptimizer, or a fixed loss_scale_factor the user chose).
  if (network().dtype_policy().name() == "mixed_float16" &&
      dynamic_cast<optim::LossScaleOptimizer*>(opt.get()) == nullptr &&
      !opt->options().loss_scale_factor) {
    opt = std::make_shared<optim::LossScaleOptimizer>(std::move(opt));
  }
  auto l = loss.resolve();
  std::vector<std::shared_ptr<metrics::Metric>> ms;
  ms.reserve(metrics.size());
  for (const MetricArg& m : metrics)
    ms.push_back(m.metric ? m.metric
                          : std::shared_ptr<metrics::Metric>(metrics::get(m.name, l->name())));
  trainer_ = std::make_shared<Trainer>(network_ptr(), std::move(opt), std::move(l), std::move(ms),
                                       options);
}

Trainer& Model::trainer() const {
  OSPREY_CHECK(trainer_ != nullptr,
               "{}: the model must be compiled before training or evaluating; call compile() first",
               network().name());
  return *trainer_;
}

namespace {
uint64_t fit_seed(const FitOptions& o) { return o.seed ? *o.seed : next_seed(); }

// int8 layers hold fixed int8 kernels: nothing to train (quant/quantize.h).
void check_trainable(const models::Network& net) {
  const std::vector<std::string> int8 = quant::int8_layers(net);
  OSPREY_CHECK(int8.empty(),
               "fit: model '{}' holds int8-quantized layers ({}); int8 models are for inference "
               "only. Train the float32 model, then quantize it again (or quantize it with mode "
               "\"float8\", which trains)",
               net.name(), fmt::join(int8, ", "));
}
}  // namespace

History Model::fit(const Tensor& x, const Tensor& y, const FitOptions& o) {
  Trainer& t = trainer();
  check_trainable(network());
  OSPREY_CHECK(o.validation_split >= 0.0 && o.validation_split < 1.0,
               "fit: validation_split must be in [0, 1). Received: {}", o.validation_split);
  OSPREY_CHECK(!(o.validation_split > 0 && o.validation_data),
               "fit: give validation_split or validation_data, not both");
  Tensor xt = x, yt = y;
  std::optional<BatchSource> val;
  const int64_t vb = o.validation_batch_size > 0 ? o.validation_batch_size : o.batch_size;
  if (o.validation_split > 0) {
    const int64_t n = x.size(0);
    const auto nv = static_cast<int64_t>(static_cast<double>(n) * o.validation_split);
    OSPREY_CHECK(nv > 0 && nv < n,
                 "fit: validation_split={} leaves {} validation and {} training samples out of {}",
                 o.validation_split, nv, n - nv, n);
    xt = x.narrow(0, 0, n - nv);
    yt = y.narrow(0, 0, n - nv);
    val = tensor_source(x.narrow(0, n - nv, nv), y.narrow(0, n - nv, nv), vb, false, 0);
  } else if (o.validation_data) {
    val = o.validation_data->dataset
              ? dataset_source(*o.validation_data->dataset)
              : tensor_source(o.validation_data->x, o.validation_data->y, vb, false, 0);
  }
  return t.fit(*this, tensor_source(xt, yt, o.batch_size, o.shuffle, fit_seed(o)), o, val);
}

History Model::fit(const data::Dataset& dataset, const FitOptions& o) {
  Trainer& t = trainer();
  check_trainable(network());
  OSPREY_CHECK(o.validation_split == 0.0,
               "fit: validation_split is not supported for datasets; pass validation_data");
  std::optional<BatchSource> val;
  if (o.validation_data) {
    const int64_t vb = o.validation_batch_size > 0 ? o.validation_batch_size : o.batch_size;
    val = o.validation_data->dataset
              ? dataset_source(*o.validation_data->dataset)
              : tensor_source(o.validation_data->x, o.validation_data->y, vb, false, 0);
  }
  return t.fit(*this, dataset_source(dataset), o, val);
}

Logs Model::evaluate(const Tensor& x, const Tensor& y, const EvaluateOptions& o) {
  return trainer().evaluate(*this, tensor_source(x, y, o.batch_size, false, 0), o);
}

Logs Model::evaluate(const data::Dataset& dataset, const EvaluateOptions& o) {
  return trainer().evaluate(*this, dataset_source(dataset), o);
}

namespace {
Tensor predict_with(models::Network& net, const BatchSource& src) {
  BatchStream stream = src.epoch(0, 0);
  Tensor bx, by;
  std::vector<Tensor> outs;
  autograd::NoGradGuard no_grad;
  while (stream(bx, by)) outs.push_back(net(autograd::Variable(bx), false).value());
  OSPREY_CHECK(!outs.empty(), "predict: the data holds no samples");
  return outs.size() == 1 ? outs[0] : concat(outs, 0);
}
}  // namespace

Tensor Model::predict(const Tensor& x, const PredictOptions& o) {
  const BatchSource src = tensor_source(x, Tensor(), o.batch_size, false, 0);
  return trainer_ ? trainer_->predict(*this, src, o) : predict_with(network(), src);
}

Tensor Model::predict(const data::Dataset& dataset, const PredictOptions& o) {
  const BatchSource src = dataset_source(dataset);
  return trainer_ ? trainer_->predict(*this, src, o) : predict_with(network(), src);
}

Logs Model::train_on_batch(const Tensor& x, const Tensor& y) {
  Trainer& t = trainer();
  t.reset_metrics();
  t.train_step(x, y);
  return t.results();
}

Logs Model::test_on_batch(const Tensor& x, const Tensor& y) {
  Trainer& t = trainer();
  t.reset_metrics();
  t.test_step(x, y);
  return t.results();
}

Tensor Model::predict_on_batch(const Tensor& x) {
  autograd::NoGradGuard no_grad;
  return network()(autograd::Variable(x), false).value();
}

autograd::Variable Model::operator()(const autograd::Variable& x, bool training) const {
  return network()(x, training);
}

void Model::build(const Shape& input_shape) const {
  Shape s = input_shape;
  s.insert(0, -1);
  network().build({s});
}

std::vector<std::string> Model::quantize(const std::string& mode,
                                         const quant::QuantizeOptions& options) const {
  std::vector<std::string> paths = quant::quantize(network(), mode, options);
  if (trainer_) trainer_->reset_executor();  // it holds the replaced layers' variables
  return paths;
}

void Model::save(const std::string& dir) const { save(dir, {}); }

void Model::save(const std::string& dir, const models::SaveExtras& extra) const {
  models::SaveExtras extras = extra;
  if (trainer_) {
    nlohmann::json metric_names = nlohmann::json::array();
    for (const auto& m : trainer_->metrics()) metric_names.push_back(m->name());
    extras.config["compile_config"] = {
        {"optimizer", optim::serialize(trainer_->optimizer())},
        {"loss", trainer_->loss().name()},
        {"metrics", metric_names},
        {"steps_per_execution", trainer_->options().steps_per_execution}};
    extras.files.emplace_back("optimizer.safetensors", trainer_->optimizer().state());
  }
  const Strategy& strategy = trainer_ ? trainer_->strategy() : *single_device_strategy();
  write_on_chief(strategy, dir, [&](const std::filesystem::path& target) {
    models::save_model(network(), target, extras);
  });
}

namespace {

// A model its builder left unbuilt (no input_shape) is built from the input shape its saved
// config records (Sequential's build_input_shape, batch axis null).
void build_from_saved_config(const std::filesystem::path& dir, models::Network& network) {
  const std::filesystem::path config_path = dir / "config.json";
  OSPREY_CHECK_T(IoError, std::filesystem::exists(config_path),
                 "{}: no saved model here (config.json does not exist)", dir.string());
  const nlohmann::json config = io::read_json_file(config_path);
  const nlohmann::json* shape = nullptr;
  if (config.contains("model") && config["model"].contains("config")) {
    const auto& c = config["model"]["config"];
    if (c.contains("build_input_shape")) shape = &c["build_input_shape"];
  }
  OSPREY_CHECK_T(IoError, shape != nullptr && shape->is_array(),
                 "{}: the model has no weights yet and the file does not record its input shape "
                 "(model.config.build_input_shape); give the model an input_shape",
                 config_path.string());
  Shape s;
  for (const auto& d : *shape) s.push_back(d.is_null() ? -1 : d.get<int64_t>());
  network.build({s});
}

}  // namespace

void Model::load_weights(const std::string& dir) const {
  const std::filesystem::path d(dir);
  OSPREY_CHECK_T(IoError, std::filesystem::exists(d / "config.json"),
                 "{}: no saved model here (config.json does not exist)", d.string());
  if (variables().empty()) build_from_saved_config(d, network());
  models::load_weights(network(), d / "model.safetensors");
}

void Model::load_optimizer_state(const std::string& dir) const {
  const std::filesystem::path state_path = std::filesystem::path(dir) / "optimizer.safetensors";
  if (!compiled() || !std::filesystem::exists(state_path)) return;
  const io::SafetensorsFile state = io::load_safetensors(state_path);
  if (state.tensors.empty()) return;
  try {
    trainer().optimizer().load_state(state.tensors);
  } catch (const ValueError& e) {
    OSPREY_THROW(IoError, "{}: the optimizer state does not fit this model's optimizer: {}",
                 state_path.string(), e.what());
  }
}

}  // namespace osprey::train

namespace osprey {

Model load_model(const std::string& dir) {
  quant::register_layers();  // a saved model may hold quantized layers
  models::LoadedModel loaded = models::load_model(dir);
  Model model(loaded.model);
  if (loaded.config.contains("compile_config")) {
    const auto& c = loaded.config["compile_config"];
    std::shared_ptr<optim::Optimizer> opt = optim::deserialize(c.at("optimizer"));
    std::vector<train::MetricArg> metrics;
    for (const auto& m : c.value("metrics", nlohmann::json::array()))
      metrics.emplace_back(m.get<std::string>());
    model.compile(opt, c.at("loss").get<std::string>(), metrics,
                  {.steps_per_execution = c.value("steps_per_execution", int64_t{1})});
    model.load_optimizer_state(dir);
  }
  return model;
}

Model Sequential(std::vector<std::shared_ptr<nn::Layer>> layers,
                 models::SequentialOptions options) {
  return Model(std::make_shared<models::Sequential>(std::move(layers), std::move(options)));
}

Model Functional(std::vector<nn::SymbolicTensor> inputs, std::vector<nn::SymbolicTensor> outputs,
                 const std::string& name) {
  return Model(std::make_shared<models::Functional>(std::move(inputs), std::move(outputs), name));
}

}  // namespace osprey
