// CSV reading. Parsed by hand on purpose: numeric CSV is a split and std::from_chars, and the
// errors must name line and column, which no Debian CSV library reports in our terms.
#include "osprey/data/csv.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <string_view>
#include <type_traits>
#include <utility>

#include "osprey/core/error.h"
#include "osprey/data/file_reader.h"

namespace osprey::data {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Whether a whole number v is one the integer dtype holds (a cast of one it does not is undefined
// behaviour); every value fits a floating-point dtype or bool.
bool fits(double v, DType dtype) {
  return visit_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      // The upper bound is 2^digits exactly: the largest T itself may not be a double.
      return v >= static_cast<double>(std::numeric_limits<T>::min()) &&
             v < std::ldexp(1.0, std::numeric_limits<T>::digits);
    } else {
      return true;
    }
  });
}

// Reads a CSV file row by row into doubles, checking every field.
class CsvReader {
 public:
  CsvReader(const std::string& path, const CsvOptions& options)
      : file_(path, "CSV file"), options_(options) {
    std::vector<std::string> columns;
    if (options.header) {
      OSPREY_CHECK_T(IoError, read_nonblank(),
                     "CSV file '{}': the file is empty, expected a header line", path);
      for (std::string_view f : fields_) columns.emplace_back(trim(f));
      header_line_ = line_no_;
    } else if (read_nonblank()) {
      for (size_t i = 0; i < fields_.size(); ++i)
        columns.push_back(fmt::format("column_{}", i + 1));
      pending_ = true;  // the line just read is data
    }
    width_ = columns.size();
    resolve_label(columns);
    for (size_t i = 0; i < columns.size(); ++i) {
      if (static_cast<int64_t>(i) == label_) {
        label_name_ = columns[i];
      } else {
        feature_names_.push_back(columns[i]);
      }
    }
  }

  int64_t num_features() const { return static_cast<int64_t>(feature_names_.size()); }
  bool has_label() const { return label_ >= 0; }
  std::vector<std::string>& feature_names() { return feature_names_; }
  const std::string& label_name() const { return label_name_; }

  // Parses the next data row into features[0, num_features) and *label; false at the end.
  bool next(double* features, double* label) {
    if (pending_) {
      pending_ = false;
    } else if (!read_nonblank()) {
      return false;
    }
    if (fields_.size() != width_) {
      OSPREY_THROW(IoError, "CSV file '{}': line {} has {} fields, expected {} ({})", file_.path(),
                   line_no_, fields_.size(), width_,
                   header_line_ ? fmt::format("as the header at line {}", header_line_)
                                : std::string("as the first line"));
    }
    int64_t f = 0;
    for (size_t c = 0; c < fields_.size(); ++c) {
      const bool is_label = static_cast<int64_t>(c) == label_;
      const double v = parse(fields_[c], c, is_label ? options_.label_dtype : options_.dtype);
      if (is_label) {
        *label = v;
      } else {
        features[f++] = v;
      }
    }
    return true;
  }

 private:
  void resolve_label(const std::vector<std::string>& columns) {
    OSPREY_CHECK(options_.label_column.empty() || !options_.label_index,
                 "CSV: give label_column or label_index, not both. Received: label_column=\"{}\", "
                 "label_index={}",
                 options_.label_column, *options_.label_index);
    if (!options_.label_column.empty()) {
      OSPREY_CHECK(options_.header,
                   "CSV file '{}': label_column=\"{}\" needs a header (header=true); "
                   "use label_index without one",
                   file_.path(), options_.label_column);
      for (size_t i = 0; i < columns.size(); ++i) {
        if (columns[i] == options_.label_column) label_ = static_cast<int64_t>(i);
      }
      OSPREY_CHECK_T(IoError, label_ >= 0,
                     "CSV file '{}': no column named \"{}\"; the header at line {} has: {}",
                     file_.path(), options_.label_column, header_line_,
                     fmt::format("{}", fmt::join(columns, ", ")));
    } else if (options_.label_index) {
      const auto w = static_cast<int64_t>(width_);
      const int64_t i =
          *options_.label_index < 0 ? w + *options_.label_index : *options_.label_index;
      OSPREY_CHECK_T(IoError, i >= 0 && i < w,
                     "CSV file '{}': label_index {} is out of range for {} columns", file_.path(),
                     *options_.label_index, w);
      label_ = i;
    }
  }

  bool read_nonblank() {
    while (file_.read_line(line_)) {
      ++line_no_;
      if (trim(line_).empty()) continue;
      split();
      return true;
    }
    return false;
  }

  void split() {
    fields_.clear();
    const std::string_view s = line_;
    size_t i = 0;
    while (true) {
      size_t begin = i;
      while (begin < s.size() && (s[begin] == ' ' || s[begin] == '\t')) ++begin;
      if (begin < s.size() && s[begin] == '"') {  // quoted: the delimiter may appear inside
        const size_t close = s.find('"', begin + 1);
        OSPREY_CHECK_T(IoError, close != std::string_view::npos,
                       "CSV file '{}': unterminated quoted field at line {}, column {}",
                       file_.path(), line_no_, fields_.size() + 1);
        fields_.push_back(s.substr(begin + 1, close - begin - 1));
        i = s.find(options_.delimiter, close);
      } else {
        i = s.find(options_.delimiter, begin);
        fields_.push_back(
            s.substr(begin, i == std::string_view::npos ? std::string_view::npos : i - begin));
      }
      if (i == std::string_view::npos) break;
      ++i;
    }
  }

  std::string column_label(size_t c) const {
    const std::string& name =
        static_cast<int64_t>(c) == label_
            ? label_name_
            : feature_names_[c - (label_ >= 0 && static_cast<int64_t>(c) > label_)];
    return fmt::format("column {} (\"{}\")", c + 1, name);
  }

  double parse(std::string_view field, size_t c, DType dtype) {
    std::string_view s = trim(field);
    if (s.empty()) {
      OSPREY_CHECK_T(
          IoError, options_.missing_value.has_value(),
          "CSV file '{}': empty field at line {}, {} (set missing_value to fill empty fields)",
          file_.path(), line_no_, column_label(c));
      return *options_.missing_value;
    }
    std::string_view digits = s.front() == '+' ? s.substr(1) : s;
    double v = 0.0;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
    OSPREY_CHECK_T(IoError, ec == std::errc() && end == digits.data() + digits.size(),
                   "CSV file '{}': non-numeric field \"{}\" at line {}, {}", file_.path(), s,
                   line_no_, column_label(c));
    OSPREY_CHECK_T(IoError, !is_integral(dtype) || (std::isfinite(v) && std::floor(v) == v),
                   "CSV file '{}': field \"{}\" at line {}, {} is not an integer (dtype {})",
                   file_.path(), s, line_no_, column_label(c), dtype_name(dtype));
    OSPREY_CHECK_T(IoError, fits(v, dtype),
                   "CSV file '{}': field \"{}\" at line {}, {} is out of the range of dtype {}",
                   file_.path(), s, line_no_, column_label(c), dtype_name(dtype));
    return v;
  }

  FileReader file_;
  CsvOptions options_;
  std::string line_;
  std::vector<std::string_view> fields_;  // into line_
  int64_t line_no_ = 0, header_line_ = 0;
  size_t width_ = 0;
  int64_t label_ = -1;
  bool pending_ = false;
  std::vector<std::string> feature_names_;
  std::string label_name_;
};

Tensor from_doubles(const double* v, const Shape& shape, DType dtype) {
  Tensor t = Tensor::empty(shape, {dtype});
  visit_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    T* p = t.data<T>();
    for (int64_t i = 0; i < t.numel(); ++i) p[i] = from_double<T>(v[i]);
  });
  return t;
}

class CsvNode final : public detail::Node {
 public:
  CsvNode(std::string path, CsvOptions options)
      : path_(std::move(path)), options_(std::move(options)) {
    CsvReader probe(path_, options_);  // fail now on a missing file, a bad header or label
  }

  class It final : public detail::IteratorImpl {
   public:
    It(const std::string& path, const CsvOptions& options)
        : reader_(path, options),
          features_(static_cast<size_t>(reader_.num_features())),
          dtype_(options.dtype),
          label_dtype_(options.label_dtype) {}
    std::optional<Element> next() override {
      double label = 0.0;
      if (!reader_.next(features_.data(), &label)) return std::nullopt;
      Element e{from_doubles(features_.data(), Shape{reader_.num_features()}, dtype_)};
      if (reader_.has_label()) e.push_back(from_doubles(&label, Shape{}, label_dtype_));
      return e;
    }

   private:
    CsvReader reader_;
    std::vector<double> features_;
    DType dtype_, label_dtype_;
  };

  std::unique_ptr<detail::IteratorImpl> make_iterator(uint64_t) const override {
    return std::make_unique<It>(path_, options_);
  }
  int64_t cardinality() const override { return kUnknown; }
  std::string label() const override { return fmt::format("Csv({})", path_); }

 private:
  std::string path_;
  CsvOptions options_;
};

}  // namespace

CsvData read_csv(const std::string& path, const CsvOptions& options) {
  CsvReader reader(path, options);
  const int64_t width = reader.num_features();
  std::vector<double> x, y;
  std::vector<double> row(static_cast<size_t>(width));
  double label = 0.0;
  int64_t rows = 0;
  while (reader.next(row.data(), &label)) {
    x.insert(x.end(), row.begin(), row.end());
    if (reader.has_label()) y.push_back(label);
    ++rows;
  }
  CsvData out;
  out.x = from_doubles(x.data(), Shape{rows, width}, options.dtype);
  if (reader.has_label())
    out.y = from_doubles(y.data(), Shape{static_cast<int64_t>(y.size())}, options.label_dtype);
  out.feature_names = std::move(reader.feature_names());
  out.label_name = reader.label_name();
  return out;
}

Dataset csv_dataset(const std::string& path, const CsvOptions& options) {
  return Dataset(std::make_shared<CsvNode>(path, options));
}

}  // namespace osprey::data
