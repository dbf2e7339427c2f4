// CSV files, read whole (read_csv) and streamed (csv_dataset), with the options osprey train
// passes: a header or not, a label column by name or by index, integer labels, missing values.
// The first byte picks the options; the rest is the file.
#include "fuzz_target.h"
#include "osprey/data/csv.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace osprey;
  if (size == 0) return 0;
  const uint8_t pick = data[0];
  data::CsvOptions options;
  options.header = (pick & 1) != 0;
  if (pick & 2) options.label_column = "label";
  if (pick & 4) options.label_index = (pick & 8) ? -1 : 0;
  if (pick & 16) options.label_dtype = DType::int64;
  if (pick & 32) options.missing_value = 0.0;
  if (pick & 64) options.delimiter = ';';
  const auto path = fuzz::scratch_file(fuzz::as_text(data + 1, size - 1), ".csv");
  fuzz::expect_refusal_or_success([&] { data::read_csv(path.string(), options); });
  fuzz::expect_refusal_or_success([&] {
    data::Iterator it = data::csv_dataset(path.string(), options).iterator();
    while (it.next()) {
    }
  });
  return 0;
}
