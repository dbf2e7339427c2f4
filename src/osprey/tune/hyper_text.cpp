#include "osprey/tune/hyper_text.h"

#include "osprey/core/error.h"
#include "osprey/losses/crossentropy.h"
#include "osprey/nn/layers/dense.h"

namespace osprey::tune::detail {

void TextTask::check() const {
  OSPREY_CHECK(vocab_size >= 2, "{}: vocab_size must be at least 2. Received: vocab_size={}", owner,
               vocab_size);
  OSPREY_CHECK(sequence_length > 0,
               "{}: sequence_length must be positive. Received: sequence_length={}", owner,
               sequence_length);
  OSPREY_CHECK(task == "classification" || task == "language_model",
               "{}: task must be classification or language_model. Received: task='{}'", owner,
               task);
  if (classifies()) {
    OSPREY_CHECK(num_classes >= 2,
                 "{}: num_classes must be at least 2 for classification. Received: num_classes={}",
                 owner, num_classes);
  } else {
    OSPREY_CHECK(num_classes == 0,
                 "{}: a language model predicts one of vocab_size tokens; leave num_classes at 0. "
                 "Received: num_classes={}",
                 owner, num_classes);
  }
}

std::shared_ptr<nn::Layer> TextTask::output_layer() const {
  if (classifies()) return layers::Dense(num_classes, "softmax", {.dtype = "float32"});
  return layers::Dense(vocab_size, {}, {.dtype = "float32"});
}

void TextTask::compile(Model& model, const OptimizerValues& o) const {
  if (classifies()) {
    model.compile(make_optimizer(o), "sparse_categorical_crossentropy", {"accuracy"});
    return;
  }
  model.compile(make_optimizer(o),
                std::make_shared<losses::SparseCategoricalCrossentropy>(
                    losses::SparseCategoricalCrossentropyOptions{.from_logits = true}),
                {"accuracy"});
}

}  // namespace osprey::tune::detail
