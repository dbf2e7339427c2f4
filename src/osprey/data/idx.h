// IDX files (the MNIST format, raw or gzip-compressed): a 4-byte magic 0x0000TTNN (TT the
// element type, NN the number of dimensions), NN big-endian uint32 sizes, then the elements,
// big-endian, row-major. Images are 0x00000803 (ubyte, [N, rows, cols]), labels 0x00000801
// (ubyte, [N]). Headers are checked against the file's size before anything is allocated, and
// every error is an IoError naming the file, the byte offset and what was wrong.
//   Tensor images = read_idx("train-images-idx3-ubyte.gz");          // uint8 [60000, 28, 28]
//   auto ds = idx_dataset({"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"})
//                 .map(scale_images).shuffle(60000, 1).batch(128).prefetch(kAutotune);
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "osprey/data/dataset.h"
#include "osprey/data/file_reader.h"
#include "osprey/tensor/tensor.h"

namespace osprey::data {

// What an IDX header says.
struct IdxHeader {
  uint8_t type_code =
      0x08;     // 0x08 ubyte, 0x09 sbyte, 0x0B int16, 0x0C int32, 0x0D float, 0x0E double
  Shape shape;  // [N, ...]
  DType dtype = DType::uint8;  // of the tensor read (int16 widens to int32: osprey has no int16)
  size_t header_bytes = 0;     // 4 + 4 * ndim
  size_t disk_element_bytes = 1;
  uint32_t magic() const noexcept {
    return (static_cast<uint32_t>(type_code) << 8) | static_cast<uint32_t>(shape.ndim());
  }
  uint64_t data_bytes() const noexcept;  // elements on disk, in bytes
};

// Reads and checks the header at the start of f (f.offset() must be 0): the magic, the type,
// the dims, and that the data they claim fits the file (exactly, for a raw file).
IdxHeader read_idx_header(FileReader& f);

// Reads `count` rows (of the header's shape[1:]) at the reader's position into dst, converted
// from big-endian to the host; throws IoError with the offset when the data ends early.
void read_idx_rows(FileReader& f, const IdxHeader& h, int64_t count, void* dst);

// The whole file as one tensor of the header's shape and dtype.
Tensor read_idx(const std::string& path);

struct IdxWriteOptions {
  bool gzip = false;
  int compression_level = 6;  // 1 (fast) .. 9 (small), gzip only
};
// Writes t (uint8, int8, int32, float32 or float64; at least 1-D) as an IDX file.
void write_idx(const std::string& path, const Tensor& t, IdxWriteOptions options = {});

// Reads several IDX files of equal length in step, record by record, as a streaming Dataset:
// element i is {row i of file 0, row i of file 1, ...} in each file's dtype (images uint8
// [28, 28], labels uint8 scalars). Headers are checked here, so a bad file fails at once;
// each pass rereads the files (add cache() to read them once).
Dataset idx_dataset(const std::vector<std::string>& paths);

}  // namespace osprey::data
