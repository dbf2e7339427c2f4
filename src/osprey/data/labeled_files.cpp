#include "osprey/data/labeled_files.h"

#include <cmath>
#include <filesystem>

#include "osprey/core/error.h"
#include "osprey/data/csv.h"
#include "osprey/data/idx.h"
#include "osprey/data/npy.h"

namespace osprey::data {
namespace {

namespace fs = std::filesystem;

// "a,b" -> {"a", "b"}; anything but two non-empty parts is a ValueError naming what it expected.
std::pair<std::string, std::string> split_pair(const std::string& path, const char* expected) {
  const size_t comma = path.find(',');
  OSPREY_CHECK(comma != std::string::npos && comma > 0 && comma + 1 < path.size() &&
                   path.find(',', comma + 1) == std::string::npos,
               "'{}': expected {}", path, expected);
  return {path.substr(0, comma), path.substr(comma + 1)};
}

// x as float32 [N, ...] (uint8 scaled to [0, 1]); one feature per row becomes [N, 1].
Tensor features(const Tensor& raw) {
  Tensor x = raw.ndim() == 1 ? raw.reshape(Shape{raw.size(0), 1}) : raw;
  if (x.dtype() != DType::uint8) return x.to(DType::float32).contiguous();
  Tensor out = Tensor::empty(x.shape(), {DType::float32});
  const Tensor c = x.contiguous();
  const uint8_t* src = c.data<uint8_t>();
  float* dst = out.data<float>();
  for (int64_t i = 0; i < out.numel(); ++i) dst[i] = static_cast<float>(src[i]) / 255.0f;
  return out;
}

// y as int64 [N]: whole numbers >= 0 ([N, 1] is taken as [N]).
Tensor class_ids(const Tensor& raw, const std::string& source) {
  OSPREY_CHECK_T(IoError, raw.ndim() == 1 || (raw.ndim() == 2 && raw.size(1) == 1),
                 "{}: labels must be one class id per row, [N] or [N, 1]; it holds {}", source,
                 raw.describe());
  const Tensor v = raw.reshape(Shape{raw.size(0)}).to(DType::float64).contiguous();
  const double* p = v.data<double>();
  for (int64_t i = 0; i < v.numel(); ++i) {
    OSPREY_CHECK_T(IoError, p[i] >= 0 && p[i] == std::floor(p[i]) && p[i] < 9.0e15,
                   "{}: label {} of row {} is not a class id (a whole number >= 0)", source, p[i],
                   i);
  }
  return raw.reshape(Shape{raw.size(0)}).to(DType::int64).contiguous();
}

LabeledFiles labeled(const Tensor& x, const Tensor& y, const std::string& x_source,
                     const std::string& y_source) {
  OSPREY_CHECK_T(IoError, x.ndim() >= 1 && y.ndim() >= 1 && x.size(0) == y.size(0),
                 "'{}' holds {} rows, but '{}' holds {} labels", x_source, x.ndim() ? x.size(0) : 0,
                 y_source, y.ndim() ? y.size(0) : 0);
  LabeledFiles out;
  out.x = features(x);
  out.y = class_ids(y, "'" + y_source + "'");
  for (int64_t label : out.y.to_vector<int64_t>())
    out.num_classes = std::max(out.num_classes, label + 1);
  return out;
}

}  // namespace

std::string detect_data_format(const std::string& path) {
  if (path.find(',') != std::string::npos) {
    const auto [x, y] = split_pair(path, "two files FEATURES,LABELS");
    return x.ends_with(".npy") && y.ends_with(".npy") ? "npy" : "idx";
  }
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  OSPREY_CHECK_T(IoError, fs::exists(status), "'{}': no such file or directory", path);
  if (fs::is_regular_file(status)) {
    if (path.ends_with(".csv") || path.ends_with(".csv.gz")) return "csv";
    OSPREY_CHECK(!path.ends_with(".npy"),
                 "'{}': one .npy file holds no labels; name both, X.npy,Y.npy (or a folder "
                 "holding x.npy and y.npy)",
                 path);
    OSPREY_THROW(ValueError,
                 "'{}': cannot tell its format: a file read alone must be a .csv (IDX and .npy "
                 "files come in pairs, FEATURES,LABELS)",
                 path);
  }
  const fs::path dir(path);
  if (fs::exists(dir / "x.npy") && fs::exists(dir / "y.npy")) return "npy";
  if (fs::exists(dir / "train-images-idx3-ubyte.gz") || fs::exists(dir / "train-images-idx3-ubyte"))
    return "fashion_mnist";
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.is_directory()) return "images";
  }
  OSPREY_THROW(ValueError,
               "'{}': cannot tell its format: a folder must hold x.npy and y.npy, Fashion-MNIST's "
               "IDX files, or one subfolder of images per class",
               path);
}

LabeledFiles read_labeled_files(const std::string& path, const LabeledFilesOptions& options) {
  const std::string format = options.format == "auto" ? detect_data_format(path) : options.format;
  if (format == "idx") {
    const auto [images, labels] = split_pair(path, "two IDX files IMAGES,LABELS");
    LabeledFiles out = labeled(read_idx(images), read_idx(labels), images, labels);
    out.format = format;
    return out;
  }
  if (format == "npy") {
    auto [x, y] =
        path.find(',') != std::string::npos
            ? split_pair(path, "two .npy files X.npy,Y.npy")
            : std::pair{(fs::path(path) / "x.npy").string(), (fs::path(path) / "y.npy").string()};
    LabeledFiles out = labeled(read_npy(x), read_npy(y), x, y);
    out.format = format;
    return out;
  }
  if (format == "csv") {
    const CsvData csv =
        read_csv(path, {.label_column = options.label_column, .label_dtype = DType::int64});
    LabeledFiles out = labeled(csv.x, csv.y, path, path + "' column '" + csv.label_name);
    out.format = format;
    return out;
  }
  if (format == "images") {
    ImageFolderData images = read_image_folder(path, options.images);
    LabeledFiles out;
    out.x = std::move(images.x);
    out.y = std::move(images.y);
    out.format = format;
    out.num_classes = static_cast<int64_t>(images.class_names.size());
    out.class_names = std::move(images.class_names);
    return out;
  }
  OSPREY_CHECK(format != "fashion_mnist",
               "'{}': Fashion-MNIST is a training and a test split; read it with "
               "datasets::fashion_mnist::load",
               path);
  OSPREY_THROW(ValueError, "unknown data format '{}' (choose auto, idx, npy, csv or images)",
               format);
}

}  // namespace osprey::data
