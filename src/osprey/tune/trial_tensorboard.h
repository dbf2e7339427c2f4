// TensorBoard for a search, laid out as KerasTuner lays it: a TensorBoard callback passed to
// search() logs each execution of each trial to LOG_DIR/trial_<id>/execution_<k> (train/ and
// validation/ inside), an HParams callback marks that run as a session of the HPARAMS tab (the
// executions of one trial form one group), and at the end of the search the experiment (every
// hyperparameter's domain, every metric the trials reported) goes to LOG_DIR itself.
#pragma once

#include <vector>

#include "osprey/train/callback.h"
#include "osprey/tune/oracle.h"
#include "osprey/tune/trial.h"

namespace osprey::tune {

// The fit callbacks of one execution of a trial: the search's, each cloned where it can be
// (callbacks keep per-fit state), with the TensorBoard ones moved to the trial's run.
std::vector<train::CallbackPtr> trial_callbacks(const std::vector<train::CallbackPtr>& callbacks,
                                                const Trial& trial, int execution);

// The experiment into the root folder of each TensorBoard callback among `callbacks`; nothing
// without one.
void write_hparams_experiment(const std::vector<train::CallbackPtr>& callbacks,
                              const Oracle& oracle);

}  // namespace osprey::tune
