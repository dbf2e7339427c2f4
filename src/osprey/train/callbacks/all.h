// Every built-in callback. The classes live in osprey::train (callback.h holds the interface);
// osprey::callbacks holds Keras's spellings, each returning a shared_ptr ready for
// FitOptions::callbacks:
//   model.fit(x, y, {.epochs = 100, .validation_split = 0.1,
//                    .callbacks = {os::callbacks::EarlyStopping({.monitor = "val_loss",
//                                                                .patience = 5}),
//                                  os::callbacks::CSVLogger("train_log.csv")}});
#pragma once

#include "osprey/train/callback.h"
#include "osprey/train/callbacks/backup_and_restore.h"
#include "osprey/train/callbacks/checkpoint_csv.h"
#include "osprey/train/callbacks/early_stopping.h"
#include "osprey/train/callbacks/history_recorder.h"
#include "osprey/train/callbacks/hparams.h"
#include "osprey/train/callbacks/lr_callbacks.h"
#include "osprey/train/callbacks/profiler.h"
#include "osprey/train/callbacks/tensorboard.h"
