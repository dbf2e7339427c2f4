// Hyperparameter tuning, KerasTuner's API in C++: HyperParameters, the RandomSearch,
// BayesianOptimization and Hyperband tuners, their oracles, the prebuilt hypermodels (HyperMLP,
// HyperCNN; HyperTransformer and HyperLSTM for token sequences), and the best-epoch retraining
// helper.
#pragma once

#include "osprey/tune/asha.h"
#include "osprey/tune/best_epoch.h"
#include "osprey/tune/builtin_tuners.h"
#include "osprey/tune/hyper_cnn.h"
#include "osprey/tune/hyper_lstm.h"
#include "osprey/tune/hyper_mlp.h"
#include "osprey/tune/hyper_transformer.h"
#include "osprey/tune/hypermodel.h"
#include "osprey/tune/hyperparameters.h"
#include "osprey/tune/objective.h"
#include "osprey/tune/oracle.h"
#include "osprey/tune/oracle_service.h"
#include "osprey/tune/report_metric.h"
#include "osprey/tune/search_space_toml.h"
#include "osprey/tune/trial.h"
#include "osprey/tune/trial_checkpoint.h"
#include "osprey/tune/tuner.h"
