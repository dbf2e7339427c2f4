#include "osprey/tune/hyper_lstm.h"

#include "osprey/core/error.h"
#include "osprey/nn/layers/all.h"
#include "osprey/tune/hyper_text.h"

namespace osprey::tune {

namespace {

struct LstmValues {
  std::string cell;
  int64_t embed_dim = 0, num_layers = 0, units = 0;
  bool bidirectional = false;
  double dropout = 0;
  detail::OptimizerValues optimizer;
};

// Every hyperparameter, in the order a search space summary lists them (the header draws the
// network they shape): cell (lstm / gru, lstm); embed_dim (32-256 step 32, 64); num_layers (1-3,
// 1); units (32-256 step 32, 64); bidirectional (Boolean, true; classification only); dropout
// (0-0.5 step 0.1, 0.2); optimizer and learning_rate (hyper_mlp.h).
LstmValues declare_lstm(HyperParameters& hp, const detail::PrebuiltSpace& space, bool classifies) {
  LstmValues v;
  v.cell =
      space.declare(hp, HyperParameter::Choice("cell", {"lstm", "gru"}, {}, "lstm")).as_string();
  v.embed_dim = space.declare(hp, detail::int_hp("embed_dim", 32, 256, 32, 64), 1, 4096).as_int();
  v.num_layers = space.declare(hp, detail::int_hp("num_layers", 1, 3, {}, 1), 1, 16).as_int();
  v.units = space.declare(hp, detail::int_hp("units", 32, 256, 32, 64), 1, 4096).as_int();
  if (classifies) {
    v.bidirectional = space.declare(hp, HyperParameter::Boolean("bidirectional", true)).as_bool();
  }
  v.dropout =
      space
          .declare(hp, HyperParameter::Float("dropout", 0.0, 0.5, 0.1, Sampling::linear, 0.2), 0.0,
                   0.95)
          .as_double();
  v.optimizer = detail::declare_optimizer(hp, space);
  return v;
}

detail::TextTask text_task(const HyperLSTMOptions& o) {
  return {.owner = "HyperLSTM",
          .vocab_size = o.vocab_size,
          .sequence_length = o.sequence_length,
          .task = o.task,
          .num_classes = o.num_classes};
}

}  // namespace

HyperLSTM::HyperLSTM(HyperLSTMOptions options) : options_(std::move(options)) {
  const detail::TextTask task = text_task(options_);
  task.check();
  const detail::PrebuiltSpace space("HyperLSTM", options_.fixed ? &*options_.fixed : nullptr);
  HyperParameters all;
  declare_lstm(all, detail::PrebuiltSpace("HyperLSTM", nullptr), task.classifies());
  space.check_names(all);
  HyperParameters probe;
  declare_lstm(probe, space, task.classifies());  // the kind and range of every override
}

Model HyperLSTM::build(HyperParameters& hp) {
  const detail::TextTask task = text_task(options_);
  const LstmValues v = declare_lstm(
      hp, detail::PrebuiltSpace("HyperLSTM", options_.fixed ? &*options_.fixed : nullptr),
      task.classifies());
  std::vector<std::shared_ptr<nn::Layer>> stack = {
      layers::Embedding(options_.vocab_size, v.embed_dim)};
  for (int64_t i = 0; i < v.num_layers; ++i) {
    // A classifier's last layer hands on its final state only.
    const nn::RecurrentOptions o{.return_sequences = !task.classifies() || i + 1 < v.num_layers};
    std::shared_ptr<nn::Layer> rnn;
    if (v.cell == "gru") {
      rnn = layers::GRU(v.units, o);
    } else {
      rnn = layers::LSTM(v.units, o);
    }
    stack.push_back(v.bidirectional ? layers::Bidirectional(rnn) : rnn);
    if (v.dropout > 0) stack.push_back(layers::Dropout(v.dropout));
  }
  stack.push_back(task.output_layer());
  Model model = Sequential(stack, {.input_shape = {options_.sequence_length}});
  task.compile(model, v.optimizer);
  return model;
}

}  // namespace osprey::tune
