// Every built-in layer, and the table the layer registry starts from.
#pragma once

#include <utility>
#include <vector>

#include "osprey/nn/layer_registry.h"
#include "osprey/nn/layers/activation.h"
#include "osprey/nn/layers/add.h"
#include "osprey/nn/layers/batch_normalization.h"
#include "osprey/nn/layers/bidirectional.h"
#include "osprey/nn/layers/concatenate.h"
#include "osprey/nn/layers/conv1d.h"
#include "osprey/nn/layers/conv2d.h"
#include "osprey/nn/layers/dense.h"
#include "osprey/nn/layers/dropout.h"
#include "osprey/nn/layers/embedding.h"
#include "osprey/nn/layers/flatten.h"
#include "osprey/nn/layers/global_average_pooling2d.h"
#include "osprey/nn/layers/layer_normalization.h"
#include "osprey/nn/layers/masking.h"
#include "osprey/nn/layers/multi_head_attention.h"
#include "osprey/nn/layers/pooling1d.h"
#include "osprey/nn/layers/pooling2d.h"
#include "osprey/nn/layers/position_embedding.h"
#include "osprey/nn/layers/random_crop.h"
#include "osprey/nn/layers/random_flip.h"
#include "osprey/nn/layers/random_translation.h"
#include "osprey/nn/layers/random_zoom.h"
#include "osprey/nn/layers/recurrent.h"
#include "osprey/nn/layers/reshape.h"
#include "osprey/nn/layers/rms_normalization.h"
#include "osprey/nn/layers/rotary_embedding.h"
#include "osprey/nn/layers/time_distributed.h"
#include "osprey/nn/layers/transformer.h"

namespace osprey::nn {

inline std::vector<std::pair<std::string, LayerFactory>> builtin_layer_factories() {
  return {
      {"Activation", &ActivationLayer::from_config},
      {"Add", &Add::from_config},
      {"AveragePooling1D", &AveragePooling1D::from_config},
      {"AveragePooling2D", &AveragePooling2D::from_config},
      {"BatchNormalization", &BatchNormalization::from_config},
      {"Bidirectional", &Bidirectional::from_config},
      {"Concatenate", &Concatenate::from_config},
      {"Conv1D", &Conv1D::from_config},
      {"Conv2D", &Conv2D::from_config},
      {"Dense", &Dense::from_config},
      {"Dropout", &Dropout::from_config},
      {"Embedding", &Embedding::from_config},
      {"Flatten", &Flatten::from_config},
      {"GlobalAveragePooling1D", &GlobalAveragePooling1D::from_config},
      {"GlobalAveragePooling2D", &GlobalAveragePooling2D::from_config},
      {"GlobalMaxPooling1D", &GlobalMaxPooling1D::from_config},
      {"GroupedQueryAttention", &GroupedQueryAttention::from_config},
      {"GroupQueryAttention", &GroupedQueryAttention::from_config},  // Keras's exported name
      {"GRU", &GRU::from_config},
      {"LayerNormalization", &LayerNormalization::from_config},
      {"LSTM", &LSTM::from_config},
      {"Masking", &Masking::from_config},
      {"MaxPooling1D", &MaxPooling1D::from_config},
      {"MaxPooling2D", &MaxPooling2D::from_config},
      {"MultiHeadAttention", &MultiHeadAttention::from_config},
      {"PositionEmbedding", &PositionEmbedding::from_config},
      {"RandomCrop", &RandomCrop::from_config},
      {"RandomFlip", &RandomFlip::from_config},
      {"RandomTranslation", &RandomTranslation::from_config},
      {"RandomZoom", &RandomZoom::from_config},
      {"RMSNormalization", &RMSNormalization::from_config},
      {"RotaryEmbedding", &RotaryEmbedding::from_config},
      {"Reshape", &Reshape::from_config},
      {"SimpleRNN", &SimpleRNN::from_config},
      {"TimeDistributed", &TimeDistributed::from_config},
      {"TransformerDecoder", &TransformerDecoder::from_config},
      {"TransformerEncoder", &TransformerEncoder::from_config},
  };
}

}  // namespace osprey::nn
