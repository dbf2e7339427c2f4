#include "osprey/data/csv.h"

#include <gtest/gtest.h>

#include "osprey/data/files_test.h"

namespace osprey::data {
namespace {

using testing::TempDir;
using testing::write_text;

template <class Fn>
std::string io_error(Fn&& fn) {
  try {
    fn();
  } catch (const IoError& e) {
    return e.what();
  }
  return "";
}

void expect_contains(const std::string& s, const std::string& part) {
  EXPECT_NE(s.find(part), std::string::npos) << "'" << part << "' not in: " << s;
}

const char* kIris =
    "sepal_length,sepal_width,petal_length,species\n"
    "5.1,3.5,1.4,0\n"
    "4.9, 3.0 ,1.4,0\r\n"
    "\n"
    "6.3,\"3.3\",6.0,2\n"
    "7.0,3.2,4.7,1";  // no final newline

TEST(CsvTest, ReadsHeaderFeaturesAndALabelColumnByName) {
  TempDir dir;
  write_text(dir / "iris.csv", kIris);
  const CsvData d =
      read_csv(dir / "iris.csv", {.label_column = "species", .label_dtype = DType::int64});
  EXPECT_EQ(d.x.shape(), (Shape{4, 3}));
  EXPECT_EQ(d.x.dtype(), DType::float32);
  EXPECT_EQ(d.y.dtype(), DType::int64);
  EXPECT_EQ(d.y.to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 2, 1}));
  EXPECT_EQ(d.x.to_vector<float>(), (std::vector<float>{5.1f, 3.5f, 1.4f, 4.9f, 3.0f, 1.4f, 6.3f,
                                                        3.3f, 6.0f, 7.0f, 3.2f, 4.7f}));
  EXPECT_EQ(d.feature_names,
            (std::vector<std::string>{"sepal_length", "sepal_width", "petal_length"}));
  EXPECT_EQ(d.label_name, "species");
  EXPECT_EQ(d.dataset().cardinality(), 4);
}

TEST(CsvTest, LabelByIndexCountsFromTheEndWhenNegative) {
  TempDir dir;
  write_text(dir / "a.csv", "1;2;3\n4;5;6\n");
  const CsvData d = read_csv(dir / "a.csv", {.header = false, .delimiter = ';', .label_index = 0});
  EXPECT_EQ(d.y.to_vector<float>(), (std::vector<float>{1, 4}));
  EXPECT_EQ(d.x.to_vector<float>(), (std::vector<float>{2, 3, 5, 6}));
  EXPECT_EQ(d.feature_names, (std::vector<std::string>{"column_2", "column_3"}));
  const CsvData last =
      read_csv(dir / "a.csv", {.header = false, .delimiter = ';', .label_index = -1});
  EXPECT_EQ(last.y.to_vector<float>(), (std::vector<float>{3, 6}));
}

TEST(CsvTest, WithoutALabelEveryColumnIsAFeature) {
  TempDir dir;
  write_text(dir / "a.csv", "a,b\n1,2\n3,4\n");
  const CsvData d = read_csv(dir / "a.csv", {.dtype = DType::float64});
  EXPECT_EQ(d.x.shape(), (Shape{2, 2}));
  EXPECT_EQ(d.x.dtype(), DType::float64);
  EXPECT_FALSE(d.y.defined());
  EXPECT_EQ(d.dataset().iterator().next()->size(), 1u);
}

TEST(CsvTest, NonNumericFieldNamesLineAndColumn) {
  TempDir dir;
  write_text(dir / "bad.csv", "a,b,c\n1,2,3\n4,5,6\n7,8,9\n1,1,1\n2,2,2\n3,3,abc\n");
  EXPECT_EQ(
      io_error([&] { read_csv(dir / "bad.csv"); }),
      "CSV file '" + dir / "bad.csv" + "': non-numeric field \"abc\" at line 7, column 3 (\"c\")");
  write_text(dir / "bad2.csv", "a,b\n1,2x\n");
  expect_contains(io_error([&] { read_csv(dir / "bad2.csv"); }),
                  "non-numeric field \"2x\" at line 2, column 2");
}

TEST(CsvTest, WrongFieldCountNamesTheLine) {
  TempDir dir;
  write_text(dir / "bad.csv", "a,b,c\n1,2,3\n4,5\n");
  expect_contains(io_error([&] { read_csv(dir / "bad.csv"); }),
                  "line 3 has 2 fields, expected 3 (as the header at line 1)");
}

TEST(CsvTest, EmptyFieldIsAnErrorUnlessAMissingValueIsGiven) {
  TempDir dir;
  write_text(dir / "gap.csv", "a,b\n1,\n");
  expect_contains(io_error([&] { read_csv(dir / "gap.csv"); }),
                  "empty field at line 2, column 2 (\"b\")");
  const CsvData d = read_csv(dir / "gap.csv", {.missing_value = -1.0});
  EXPECT_EQ(d.x.to_vector<float>(), (std::vector<float>{1, -1}));
}

TEST(CsvTest, IntegerLabelsMustBeIntegers) {
  TempDir dir;
  write_text(dir / "l.csv", "x,y\n1,2\n3,2.5\n");
  expect_contains(io_error([&] {
                    read_csv(dir / "l.csv", {.label_column = "y", .label_dtype = DType::int64});
                  }),
                  "field \"2.5\" at line 3, column 2 (\"y\") is not an integer (dtype int64)");
}

// Found by fuzz_csv (fuzz/regressions/csv): a whole number past the label dtype's range was cast
// to it, which is undefined behaviour. 2^63 is the first int64 cannot hold; 2^63 - 1024 (the
// double below it) fits.
TEST(CsvTest, IntegerLabelsMustFitTheirDtype) {
  TempDir dir;
  write_text(dir / "big.csv", "x,y\n1,2\n3,47777777777777777777777777771\n");
  expect_contains(io_error([&] {
                    read_csv(dir / "big.csv", {.label_column = "y", .label_dtype = DType::int64});
                  }),
                  "field \"47777777777777777777777777771\" at line 3, column 2 (\"y\") is out "
                  "of the range of dtype int64");
  write_text(dir / "edge.csv", "x,y\n1,9223372036854775808\n");
  expect_contains(io_error([&] {
                    read_csv(dir / "edge.csv", {.label_column = "y", .label_dtype = DType::int64});
                  }),
                  "is out of the range of dtype int64");
  write_text(dir / "ok.csv", "x,y\n1,9223372036854774784\n2,-9223372036854775808\n");
  const CsvData d = read_csv(dir / "ok.csv", {.label_column = "y", .label_dtype = DType::int64});
  EXPECT_EQ(d.y.to_vector<int64_t>(), (std::vector<int64_t>{9223372036854774784, INT64_MIN}));
  write_text(dir / "neg.csv", "x,y\n1,-1\n");
  expect_contains(io_error([&] {
                    read_csv(dir / "neg.csv", {.label_column = "y", .label_dtype = DType::uint8});
                  }),
                  "field \"-1\" at line 2, column 2 (\"y\") is out of the range of dtype uint8");
}

TEST(CsvTest, UnknownLabelColumnListsTheHeader) {
  TempDir dir;
  write_text(dir / "a.csv", "a,b\n1,2\n");
  expect_contains(io_error([&] { read_csv(dir / "a.csv", {.label_column = "label"}); }),
                  "no column named \"label\"; the header at line 1 has: a, b");
  expect_contains(io_error([&] { read_csv(dir / "a.csv", {.label_index = 5}); }),
                  "label_index 5 is out of range for 2 columns");
  EXPECT_THROW(read_csv(dir / "a.csv", {.header = false, .label_column = "a"}), ValueError);
}

TEST(CsvTest, EmptyFileAndMissingFile) {
  TempDir dir;
  write_text(dir / "empty.csv", "");
  expect_contains(io_error([&] { read_csv(dir / "empty.csv"); }),
                  "the file is empty, expected a header line");
  expect_contains(io_error([&] { read_csv(dir / "nope.csv"); }), "nope.csv': no such file");
}

TEST(CsvTest, CsvDatasetStreamsRowsAndReadsGzip) {
  TempDir dir;
  std::string text = "f1,f2,label\n";
  for (int i = 0; i < 100; ++i)
    text += std::to_string(i) + "," + std::to_string(2 * i) + "," + std::to_string(i % 3) + "\n";
  const std::vector<unsigned char> bytes(text.begin(), text.end());
  testing::write_gzip(dir / "data.csv.gz", bytes);
  Dataset ds =
      csv_dataset(dir / "data.csv.gz", {.label_column = "label", .label_dtype = DType::int64});
  EXPECT_EQ(ds.cardinality(), kUnknown);
  int64_t n = 0;
  for (auto& e : ds.batch(32)) {
    EXPECT_EQ(e[0].size(1), 2);
    n += e[0].size(0);
  }
  EXPECT_EQ(n, 100);
  auto it = ds.iterator();
  it.skip(10);
  auto e = it.next();
  EXPECT_EQ(e->x().to_vector<float>(), (std::vector<float>{10, 20}));
  EXPECT_EQ(e->y().item(), 1.0);
  EXPECT_EQ(e->y().dtype(), DType::int64);
  // A bad row fails when iterated, naming its line.
  write_text(dir / "late.csv", "a\n1\n2\nzz\n");
  Dataset late = csv_dataset(dir / "late.csv");
  try {
    testing::values(late);
    FAIL() << "expected IoError";
  } catch (const IoError& err) {
    expect_contains(err.what(), "non-numeric field \"zz\" at line 4, column 1 (\"a\")");
  }
}

}  // namespace
}  // namespace osprey::data
