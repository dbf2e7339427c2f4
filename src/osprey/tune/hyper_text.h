// What the text hypermodels (HyperTransformer, HyperLSTM) share: the task a network over token
// ids [batch, sequence_length] is built for, with its checks, its output layer and its compile
// step. classification: one label per sequence, Dense(num_classes, softmax) on a summary vector.
// language_model: the next token at every position, Dense(vocab_size) logits [batch, T, vocab]
// for targets [batch, T] (the inputs shifted by one, as data/text/language_model_dataset.h makes).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "osprey/tune/hyper_mlp.h"

namespace osprey::tune::detail {

struct TextTask {
  std::string owner;  // the hypermodel, for messages
  int64_t vocab_size = 0;
  int64_t sequence_length = 0;
  std::string task;
  int num_classes = 0;

  // ValueError naming `owner` for vocab_size < 2, a non-positive sequence_length, another task,
  // num_classes < 2 for classification, or num_classes set for a language model.
  void check() const;
  bool classifies() const { return task == "classification"; }
  // Dense(num_classes, softmax) or Dense(vocab_size) (logits); float32 under a mixed precision
  // policy, as Keras advises for outputs.
  std::shared_ptr<nn::Layer> output_layer() const;
  // sparse_categorical_crossentropy (from logits for a language model) and accuracy (of the next
  // token, for a language model), with the optimizer `o` names.
  void compile(Model& model, const OptimizerValues& o) const;
};

}  // namespace osprey::tune::detail
