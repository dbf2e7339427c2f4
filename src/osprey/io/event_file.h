// EventFileWriter: TensorBoard's event files (events.out.tfevents.*), so `tensorboard --logdir`
// shows osprey's training curves and weight histograms. Each record is TFRecord-framed (u64
// length, masked CRC32C of the length, the bytes, masked CRC32C of the bytes) around an Event
// protobuf (tensorboard.proto, TensorBoard's field numbers); the first Event names the format
// ("brain.Event:2"). Every add_* is written and flushed at once, so a killed run keeps what it
// logged and TensorBoard can read the file while training goes on.
//   io::EventFileWriter w("logs/train");
//   w.add_scalar("epoch_loss", 0.42, /*step=*/0);
//   w.add_histogram("sequential/dense/kernel", kernel.data<float>(), kernel.numel(), 0);
#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>

namespace osprey::io {

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
  const std::filesystem::path& path() const noexcept { return path_; }

 private:
  void write_event(const std::string& serialized);
  std::filesystem::path path_;
  std::FILE* file_ = nullptr;
};

}  // namespace osprey::io
