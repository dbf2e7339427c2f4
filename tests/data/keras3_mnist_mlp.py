"""Writes keras3_mnist_mlp.json, the fixture of models_test's Keras3 tests (model_config_test.cpp):
what Keras 3's model.to_json() holds for a Sequential MLP, verbatim. Generated with Keras 3.15.1
(KERAS_BACKEND=jax; the backend does not change the JSON):
    python3 keras3_mnist_mlp.py > keras3_mnist_mlp.json
"""
import keras
from keras import initializers, layers, regularizers

model = keras.Sequential(
    [
        keras.Input(shape=(784,)),
        layers.Dense(128, activation="relu", kernel_initializer=initializers.GlorotUniform(),
                     bias_initializer=initializers.Zeros(),
                     kernel_regularizer=regularizers.L2(1e-4)),
        layers.Dropout(0.2),
        layers.Dense(10, activation="softmax"),
    ],
    name="mnist_mlp",
)
print(model.to_json(indent=2))
