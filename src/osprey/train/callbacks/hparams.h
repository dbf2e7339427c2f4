// HParams (TensorBoard's hparams_api.KerasCallback): marks a fit as one session of the HPARAMS
// tab. At the start of training it writes the session's hyperparameter values into log_dir, at
// the end its status, so TensorBoard lines up each run's hyperparameters with the metrics a
// TensorBoard callback writes under the same folder (log_dir/train, log_dir/validation). The
// tuner adds one per trial execution; only the chief of a multi-worker job writes.
//   model.fit(x, y, {.callbacks = {os::callbacks::TensorBoard("logs/run_1"),
//                                  os::callbacks::HParams("logs/run_1", {{"units", 64.0}})}});
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "osprey/io/event_file.h"
#include "osprey/train/callback.h"

namespace osprey::train {

class HParams : public Callback {
 public:
  // group_name: sessions of one group are repeats of the same hyperparameters (the executions of
  // one trial); empty makes each session its own group.
  HParams(std::filesystem::path log_dir, std::map<std::string, io::HParamValue> hparams,
          std::string group_name = {});
  void on_train_begin(const Logs& logs) override;
  void on_train_end(const Logs& logs) override;
  std::shared_ptr<Callback> clone() const override {
    return std::make_shared<HParams>(log_dir_, hparams_, group_name_);
  }

 private:
  std::filesystem::path log_dir_;
  std::map<std::string, io::HParamValue> hparams_;
  std::string group_name_;
  std::unique_ptr<io::EventFileWriter> writer_;  // null off the chief
};

}  // namespace osprey::train

namespace osprey::callbacks {
inline std::shared_ptr<train::HParams> HParams(std::filesystem::path log_dir,
                                               std::map<std::string, io::HParamValue> hparams,
                                               std::string group_name = {}) {
  return std::make_shared<train::HParams>(std::move(log_dir), std::move(hparams),
                                          std::move(group_name));
}
}  // namespace osprey::callbacks
