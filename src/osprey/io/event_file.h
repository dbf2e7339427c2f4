// EventFileWriter: TensorBoard's event files (events.out.tfevents.*), so `tensorboard --logdir`
// shows osprey's training curves and weight histograms. Each record is TFRecord-framed (u64
// length, masked CRC32C of the length, the bytes, masked CRC32C of the bytes) around an Event
// protobuf (tensorboard.proto, TensorBoard's field numbers); the first Event names the format
// ("brain.Event:2"). Every add_* is written and flushed at once, so a killed run keeps what it
// logged and TensorBoard can read the file while training goes on.
//   io::EventFileWriter w("logs/train");
//   w.add_scalar("epoch_loss", 0.42, /*step=*/0);
//   w.add_histogram("sequential/dense/kernel", kernel.data<float>(), kernel.numel(), 0);
//   w.add_session_start({{"units", 64.0}, {"optimizer", "adam"}}, "trial_3");
#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace osprey::io {

// TensorBoard's hparams plugin (the HPARAMS tab). A session is one training run of one set of
// hyperparameters: its start and end go in the run's folder, its metrics are the scalars in the
// folder's subfolders (train/, validation/). The experiment, in the root folder, lists every
// hyperparameter with its domain and every metric, so the tab can filter and sort.
using HParamValue = std::variant<bool, double, std::string>;
struct HParamInfo {
  std::string name;
  std::vector<HParamValue> values{};                 // a discrete domain, or
  std::optional<std::pair<double, double>> range{};  // a numeric interval [min, max]
};
struct HParamMetric {
  std::string group;  // the subfolder: "train" or "validation"
  std::string tag;    // "epoch_loss"
};
enum class SessionStatus { unknown = 0, success = 1, failure = 2, running = 3 };

// TFRecord's checksum: CRC32C rotated right by 15 bits plus 0xa282ead8.
uint32_t masked_crc32c(std::string_view bytes) noexcept;

class EventFileWriter {
 public:
  // Creates `dir` (and parents) and a new event file in it; IoError naming the path otherwise.
  explicit EventFileWriter(const std::filesystem::path& dir);
  ~EventFileWriter();
  EventFileWriter(const EventFileWriter&) = delete;
  EventFileWriter& operator=(const EventFileWriter&) = delete;

  void add_scalar(const std::string& tag, double value, int64_t step);
  // A histogram of n values in 30 equal-width buckets between their min and max (TensorBoard's
  // HistogramProto: right edges and counts). Non-finite values are an error naming the tag.
  void add_histogram(const std::string& tag, const float* values, int64_t n, int64_t step);
  // The hparams plugin's summaries (event_file_hparams.cpp), at step 0.
  void add_hparams_experiment(const std::vector<HParamInfo>& hparams,
                              const std::vector<HParamMetric>& metrics);
  void add_session_start(const std::map<std::string, HParamValue>& hparams,
                         const std::string& group_name);
  void add_session_end(SessionStatus status);
  const std::filesystem::path& path() const noexcept { return path_; }

 private:
  void write_event(const std::string& serialized);
  void write_hparams(const std::string& tag, const std::string& content);
  std::filesystem::path path_;
  std::FILE* file_ = nullptr;
};

}  // namespace osprey::io
