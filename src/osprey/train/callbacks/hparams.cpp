#include "osprey/train/callbacks/hparams.h"

#include "osprey/core/error.h"
#include "osprey/train/model.h"
#include "osprey/train/trainer.h"

namespace osprey::train {

HParams::HParams(std::filesystem::path log_dir, std::map<std::string, io::HParamValue> hparams,
                 std::string group_name)
    : log_dir_(std::move(log_dir)),
      hparams_(std::move(hparams)),
      group_name_(std::move(group_name)) {
  OSPREY_CHECK(!log_dir_.empty(), "HParams: the log folder is empty");
}

void HParams::on_train_begin(const Logs&) {
  writer_.reset();
  if (!model().trainer().strategy().is_chief()) return;
  writer_ = std::make_unique<io::EventFileWriter>(log_dir_);
  writer_->add_session_start(hparams_, group_name_);
}

// Only a fit that returns ends its session: one cut short by an error or a kill stays without an
// end, as Keras's callback leaves it, and TensorBoard shows its status as unknown.
void HParams::on_train_end(const Logs&) {
  if (writer_) writer_->add_session_end(io::SessionStatus::success);
  writer_.reset();
}

}  // namespace osprey::train
