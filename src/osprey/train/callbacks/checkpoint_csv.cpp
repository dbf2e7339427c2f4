#include "osprey/train/callbacks/checkpoint_csv.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "osprey/train/model.h"

namespace osprey::train {

ModelCheckpoint::ModelCheckpoint(std::string path, ModelCheckpointOptions options)
    : path_(std::move(path)), o_(std::move(options)) {
  OSPREY_CHECK(!path_.empty(), "ModelCheckpoint: the path is empty");
  OSPREY_CHECK(o_.mode == "auto" || o_.mode == "min" || o_.mode == "max",
               "ModelCheckpoint: mode must be 'auto', 'min' or 'max'. Received: '{}'", o_.mode);
  maximize_ =
      o_.mode == "max" || (o_.mode == "auto" && o_.monitor.find("acc") != std::string::npos);
}

void ModelCheckpoint::on_train_begin(const Logs&) {
  best_ = (maximize_ ? -1.0 : 1.0) * std::numeric_limits<double>::infinity();
}

void ModelCheckpoint::on_epoch_end(int epoch, const Logs& logs) {
  if (o_.save_best_only) {
    const std::optional<double> v = logs.get(o_.monitor);
    OSPREY_CHECK(v.has_value(), "ModelCheckpoint: the monitored value '{}' is not in the logs ({})",
                 o_.monitor, logs.format());
    if (!(maximize_ ? *v > best_ : *v < best_)) return;
    best_ = *v;
  }
  std::string path = path_;
  const std::string token = "{epoch}";
  for (size_t at = path.find(token); at != std::string::npos; at = path.find(token)) {
    path.replace(at, token.size(), std::to_string(epoch + 1));
  }
  model().save(path);
  saved_.push_back(path);
}

CSVLogger::CSVLogger(std::string filename, std::string separator, bool append)
    : filename_(std::move(filename)), sep_(std::move(separator)), append_(append) {}

CSVLogger::~CSVLogger() {
  if (file_ != nullptr) std::fclose(file_);
}

void CSVLogger::on_train_begin(const Logs&) {
  const bool had_rows =
      append_ && std::filesystem::exists(filename_) && std::filesystem::file_size(filename_) > 0;
  // A folder named in the path is created, as ModelCheckpoint and TensorBoard create theirs
  // (`osprey train --csv-log logs/run1.csv` on a fresh clone).
  const std::filesystem::path parent = std::filesystem::path(filename_).parent_path();
  std::error_code ec;
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  OSPREY_CHECK_T(IoError, !ec, "CSVLogger: cannot create the folder {} for {}: {}", parent.string(),
                 filename_, ec.message());
  file_ = std::fopen(filename_.c_str(), append_ ? "a" : "w");
  OSPREY_CHECK_T(IoError, file_ != nullptr, "CSVLogger: cannot open {}: {}", filename_,
                 std::strerror(errno));
  keys_.clear();
  if (had_rows) keys_.push_back("");  // header already written by the earlier run
}

void CSVLogger::on_epoch_end(int epoch, const Logs& logs) {
  if (file_ == nullptr) return;
  if (keys_.empty()) {
    fmt::print(file_, "epoch");
    for (const auto& [k, v] : logs.items()) fmt::print(file_, "{}{}", sep_, k);
    fmt::print(file_, "\n");
  }
  keys_.clear();
  for (const auto& [k, v] : logs.items()) keys_.push_back(k);
  fmt::print(file_, "{}", epoch);
  for (const auto& [k, v] : logs.items()) fmt::print(file_, "{}{}", sep_, v);
  fmt::print(file_, "\n");
  std::fflush(file_);
}

void CSVLogger::on_train_end(const Logs&) {
  if (file_ != nullptr) std::fclose(file_);
  file_ = nullptr;
}

}  // namespace osprey::train
