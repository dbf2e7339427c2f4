// What Keras writes for a model, read as osprey's own description (model_config.h): Keras 3's
// model.to_json() (serialization_lib.serialize_keras_object) wraps every object as
// {"module": "keras.layers", "class_name": "Dense", "config": {...}, "registered_name": null,
// "build_config": {"input_shape": [null, 784]}}, writes each dtype as a DTypePolicy object
// ({"class_name": "DTypePolicy", "config": {"name": "float32"}, ...}) and starts a Sequential
// with an InputLayer ({"batch_shape": [null, 784], "dtype": "float32", "sparse": false, ...});
// Keras 2 wrote "batch_input_shape" there. The rewrite drops the wrapping keys, turns each
// DTypePolicy into its name and the InputLayer's shape into the Sequential's build_input_shape
// (the InputLayer entry stays, so errors name layers by their place in the file; Sequential's
// from_config passes over it), and a Functional's calls ({"args", "kwargs"} on Keras tensors)
// into the references [layer, node, tensor] osprey's functional configs hold, initial_state
// included, so Keras's seq2seq (LSTMs with return_state) reads. It keeps osprey's own descriptions
// as they are, so model_from_config runs it on every description:
//   nlohmann::json net = models::from_keras_config(nlohmann::json::parse(keras_json), "");
//   // net: {"class_name": "Sequential", "config": {"build_input_shape": [null, 784], ...}}
// What osprey cannot honour is refused, naming the field, rather than dropped: a sparse, ragged
// or optional input, an InputLayer past a Sequential's first layer, a quantized dtype policy,
// weight constraints, an activity regularizer, Keras's quantization or LoRA settings. Initializer
// and regularizer objects keep their Keras shape; nn/initializers.h and nn/regularizer.h read
// them (an initializer's seed is not read: Keras's random stream is not osprey's anyway).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace osprey::models {

// The model entry `model` ({"class_name": ..., "config": {...}, ...}) with Keras's wrapping
// removed, every layer's, nested models' included. `where` prefixes the field in errors ("" for
// the model alone, "model." inside config.json): a ValueError such as
// "layers[0] (InputLayer): sparse: osprey has no sparse tensors. Received: true".
nlohmann::json from_keras_config(const nlohmann::json& model, const std::string& where);

}  // namespace osprey::models
