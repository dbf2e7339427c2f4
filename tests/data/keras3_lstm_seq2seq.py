"""Writes keras3_lstm_seq2seq.json, the fixture of models_test's Keras 3 seq2seq import test
(keras_config_test.cpp): under "model", what Keras 3's model.to_json() holds for the encoder-
decoder of Keras's lstm_seq2seq example (LSTM return_state, initial_state), verbatim; under
"weights", "encoder_inputs", "decoder_inputs" and "outputs", deterministic weights and inputs
(v[i] = 0.5 sin(0.37 i + 0.11 tag)) and the model's prediction for them. Generated with
Keras 3.15.1 (KERAS_BACKEND=numpy; the backend does not change the JSON):
    python3 keras3_lstm_seq2seq.py > keras3_lstm_seq2seq.json
"""
import json
import os

os.environ.setdefault("KERAS_BACKEND", "numpy")
import keras  # noqa: E402
import numpy as np  # noqa: E402
from keras import layers  # noqa: E402


def wave(shape, tag):
    n = int(np.prod(shape))
    return (0.5 * np.sin(0.37 * np.arange(n) + 0.11 * tag)).reshape(shape).astype("float32")


encoder_inputs = keras.Input((None, 3), name="encoder_inputs")
_, state_h, state_c = layers.LSTM(4, return_state=True, name="encoder")(encoder_inputs)
decoder_inputs = keras.Input((None, 2), name="decoder_inputs")
decoder_outputs, _, _ = layers.LSTM(4, return_sequences=True, return_state=True, name="decoder")(
    decoder_inputs, initial_state=[state_h, state_c])
outputs = layers.Dense(2, activation="softmax", name="dense")(decoder_outputs)
model = keras.Model([encoder_inputs, decoder_inputs], outputs, name="seq2seq")

weights = []
for tag, w in enumerate(model.weights):
    value = wave(tuple(w.shape), tag)
    w.assign(value)
    weights.append({"path": w.path, "shape": list(w.shape), "values": value.ravel().tolist()})
x_enc = wave((2, 5, 3), 20)
x_dec = wave((2, 4, 2), 21)
y = model.predict([x_enc, x_dec], verbose=0)
print(json.dumps({"model": json.loads(model.to_json()), "weights": weights,
                  "encoder_inputs": x_enc.ravel().tolist(),
                  "decoder_inputs": x_dec.ravel().tolist(),
                  "outputs": y.ravel().tolist()}, indent=1))
