// CSV files of numeric columns (raw or gzip-compressed), with an optional header and an optional
// label column chosen by name or index. read_csv loads the whole file into two tensors;
// csv_dataset streams it row by row. Malformed input is an IoError naming the file, the line
// and the column (both counted from 1, as editors do): `CSV file 'iris.csv': non-numeric field
// "abc" at line 7, column 3 ("petal_length")`.
//   auto iris = read_csv("iris.csv", {.label_column = "species", .label_dtype = DType::int64});
//   Dataset ds = iris.shuffle(150, 1).batch(16);                    // {x [16, 4], y [16]}
//   auto stream = csv_dataset("big.csv.gz", {.label_index = -1});  // the last column
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "osprey/data/dataset.h"
#include "osprey/data/labeled_arrays.h"

namespace osprey::data {

struct CsvOptions {
  bool header = true;  // the first line names the columns
  char delimiter = ',';
  // The label column, by header name, or by 0-based index (negative counts from the end);
  // neither: every column is a feature and y stays undefined.
  std::string label_column = {};
  std::optional<int> label_index = std::nullopt;
  DType dtype = DType::float32;        // of the features
  DType label_dtype = DType::float32;  // int64 for class ids (the field must be an integer)
  // Value for empty fields; unset: an empty field is an error.
  std::optional<double> missing_value = std::nullopt;
};

// x [rows, features], y [rows] (when a label column was chosen), and the column names (from
// the header, else "column_1", "column_2", ...).
struct CsvData : LabeledArrays {
  std::vector<std::string> feature_names;
  std::string label_name;
};

CsvData read_csv(const std::string& path, const CsvOptions& options = {});

// Streams the file; elements are {features [F]} or {features [F], label []}. The header (and
// the label column) are checked here; the rows when iterated.
Dataset csv_dataset(const std::string& path, const CsvOptions& options = {});

}  // namespace osprey::data
