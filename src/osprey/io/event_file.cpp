#include "osprey/io/event_file.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <vector>

#include "osprey/core/error.h"
#include "osprey/io/crc32c.h"
#include "osprey/io/tensorboard.pb.h"

namespace osprey::io {

namespace {

constexpr int kHistogramBuckets = 30;

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// TensorBoard sorts a run's files by name and reads them in turn: time, host, pid and a
// per-process counter make each new file sort last and never collide.
std::string file_name() {
  static std::atomic<int> made{0};
  char host[256] = "localhost";
  gethostname(host, sizeof host - 1);
  const auto secs = static_cast<int64_t>(now_seconds());
  return "events.out.tfevents." + std::to_string(secs) + "." + host + "." +
         std::to_string(getpid()) + "." + std::to_string(made++) + ".v2";
}

}  // namespace

uint32_t masked_crc32c(std::string_view bytes) noexcept {
  const uint32_t crc = crc32c(bytes);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8U;
}

EventFileWriter::EventFileWriter(const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  OSPREY_CHECK_T(IoError, !ec && std::filesystem::is_directory(dir),
                 "TensorBoard: cannot create the log folder {}: {}", dir.string(),
                 ec ? ec.message() : "a file of that name exists");
  path_ = dir / file_name();
  file_ = std::fopen(path_.c_str(), "wb");
  OSPREY_CHECK_T(IoError, file_ != nullptr, "TensorBoard: cannot create {}: {}", path_.string(),
                 std::strerror(errno));
  tensorboard::Event first;
  first.set_wall_time(now_seconds());
  first.set_file_version("brain.Event:2");
  write_event(first.SerializeAsString());
}

EventFileWriter::~EventFileWriter() {
  if (file_ != nullptr) std::fclose(file_);
}

void EventFileWriter::add_scalar(const std::string& tag, double value, int64_t step) {
  tensorboard::Event event;
  event.set_wall_time(now_seconds());
  event.set_step(step);
  tensorboard::Summary::Value* v = event.mutable_summary()->add_value();
  v->set_tag(tag);
  v->set_simple_value(static_cast<float>(value));
  write_event(event.SerializeAsString());
}

void EventFileWriter::add_histogram(const std::string& tag, const float* values, int64_t n,
                                    int64_t step) {
  OSPREY_CHECK(n > 0, "TensorBoard: histogram '{}' has no values", tag);
  double lo = values[0], hi = values[0], sum = 0.0, squares = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const double x = values[i];
    OSPREY_CHECK(std::isfinite(x), "TensorBoard: histogram '{}' holds {} at index {}", tag, x, i);
    lo = std::min(lo, x);
    hi = std::max(hi, x);
    sum += x;
    squares += x * x;
  }
  // Equal-width buckets over [lo, hi]; one bucket when every value is the same.
  const int buckets = hi > lo ? kHistogramBuckets : 1;
  const double width = (hi - lo) / buckets;
  std::vector<double> counts(static_cast<size_t>(buckets), 0.0);
  for (int64_t i = 0; i < n; ++i) {
    const int b = buckets == 1 ? 0 : static_cast<int>((values[i] - lo) / width);
    counts[static_cast<size_t>(std::clamp(b, 0, buckets - 1))] += 1.0;
  }
  tensorboard::Event event;
  event.set_wall_time(now_seconds());
  event.set_step(step);
  tensorboard::Summary::Value* v = event.mutable_summary()->add_value();
  v->set_tag(tag);
  tensorboard::HistogramProto* h = v->mutable_histo();
  h->set_min(lo);
  h->set_max(hi);
  h->set_num(static_cast<double>(n));
  h->set_sum(sum);
  h->set_sum_squares(squares);
  for (int b = 0; b < buckets; ++b) {
    h->add_bucket_limit(b + 1 == buckets ? hi : lo + width * (b + 1));
    h->add_bucket(counts[static_cast<size_t>(b)]);
  }
  write_event(event.SerializeAsString());
}

namespace {

constexpr int kHParamsPluginVersion = 0;  // tensorboard/plugins/hparams/metadata.py
constexpr int kDtFloat = 1;               // tensorflow DataType DT_FLOAT

google::protobuf::Value to_proto(const HParamValue& v) {
  google::protobuf::Value out;
  if (const bool* b = std::get_if<bool>(&v)) {
    out.set_bool_value(*b);
  } else if (const double* d = std::get_if<double>(&v)) {
    out.set_number_value(*d);
  } else {
    out.set_string_value(std::get<std::string>(v));
  }
  return out;
}

// The type the tab sorts and filters a hyperparameter by: its values' one type, else unset.
tensorboard::HParamDataType type_of(const HParamInfo& info) {
  if (info.range) return tensorboard::DATA_TYPE_FLOAT64;
  if (info.values.empty()) return tensorboard::DATA_TYPE_UNSET;
  const size_t kind = info.values.front().index();
  for (const HParamValue& v : info.values) {
    if (v.index() != kind) return tensorboard::DATA_TYPE_UNSET;
  }
  return kind == 0   ? tensorboard::DATA_TYPE_BOOL
         : kind == 1 ? tensorboard::DATA_TYPE_FLOAT64
                     : tensorboard::DATA_TYPE_STRING;
}

// Version 0 is the only one TensorBoard reads (proto3 writes no field for it; set for clarity).
tensorboard::HParamsPluginData plugin_data() {
  tensorboard::HParamsPluginData data;
  data.set_version(kHParamsPluginVersion);
  return data;
}

}  // namespace

void EventFileWriter::add_hparams_experiment(const std::vector<HParamInfo>& hparams,
                                             const std::vector<HParamMetric>& metrics) {
  tensorboard::HParamsPluginData data = plugin_data();
  tensorboard::Experiment* e = data.mutable_experiment();
  e->set_time_created_secs(now_seconds());
  for (const HParamInfo& h : hparams) {
    tensorboard::HParamInfo* info = e->add_hparam_infos();
    info->set_name(h.name);
    info->set_type(type_of(h));
    if (h.range) {
      info->mutable_domain_interval()->set_min_value(h.range->first);
      info->mutable_domain_interval()->set_max_value(h.range->second);
    } else if (!h.values.empty()) {
      for (const HParamValue& v : h.values)
        *info->mutable_domain_discrete()->add_values() = to_proto(v);
    }
  }
  for (const HParamMetric& m : metrics) {
    tensorboard::MetricInfo* info = e->add_metric_infos();
    info->mutable_name()->set_group(m.group);
    info->mutable_name()->set_tag(m.tag);
    info->set_dataset_type(m.group == "validation" ? tensorboard::DATASET_VALIDATION
                           : m.group == "train"    ? tensorboard::DATASET_TRAINING
                                                   : tensorboard::DATASET_UNKNOWN);
  }
  write_hparams("_hparams_/experiment", data.SerializeAsString());
}

void EventFileWriter::add_session_start(const std::map<std::string, HParamValue>& hparams,
                                        const std::string& group_name) {
  tensorboard::HParamsPluginData data = plugin_data();
  tensorboard::SessionStartInfo* start = data.mutable_session_start_info();
  for (const auto& [name, value] : hparams) (*start->mutable_hparams())[name] = to_proto(value);
  start->set_group_name(group_name);
  start->set_start_time_secs(now_seconds());
  write_hparams("_hparams_/session_start_info", data.SerializeAsString());
}

void EventFileWriter::add_session_end(SessionStatus status) {
  tensorboard::HParamsPluginData data = plugin_data();
  data.mutable_session_end_info()->set_status(static_cast<tensorboard::SessionStatus>(status));
  data.mutable_session_end_info()->set_end_time_secs(now_seconds());
  write_hparams("_hparams_/session_end_info", data.SerializeAsString());
}

// The plugin reads its data from the summary's metadata; the value is an empty float tensor, as
// TensorBoard's own hparams summaries write it.
void EventFileWriter::write_hparams(const std::string& tag, const std::string& content) {
  tensorboard::Event event;
  event.set_wall_time(now_seconds());
  event.set_step(0);
  tensorboard::Summary::Value* v = event.mutable_summary()->add_value();
  v->set_tag(tag);
  tensorboard::SummaryMetadata::PluginData* p = v->mutable_metadata()->mutable_plugin_data();
  p->set_plugin_name("hparams");
  p->set_content(content);
  tensorboard::TensorProto* t = v->mutable_tensor();
  t->set_dtype(kDtFloat);
  t->mutable_tensor_shape()->add_dim()->set_size(0);
  write_event(event.SerializeAsString());
}

void EventFileWriter::write_event(const std::string& serialized) {
  const uint64_t length = serialized.size();
  char header[12];
  std::memcpy(header, &length, 8);  // little-endian, as TFRecord (x86-64)
  const uint32_t length_crc = masked_crc32c({header, 8});
  std::memcpy(header + 8, &length_crc, 4);
  const uint32_t data_crc = masked_crc32c(serialized);
  const bool ok =
      std::fwrite(header, 1, sizeof header, file_) == sizeof header &&
      std::fwrite(serialized.data(), 1, serialized.size(), file_) == serialized.size() &&
      std::fwrite(&data_crc, 1, 4, file_) == 4 && std::fflush(file_) == 0;
  OSPREY_CHECK_T(IoError, ok, "TensorBoard: cannot write {}: {}", path_.string(),
                 std::strerror(errno));
}

}  // namespace osprey::io
