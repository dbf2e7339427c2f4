// NumPy's .npy files (np.save): a magic "\x93NUMPY", a version (1.0, 2.0 or 3.0), a little-endian
// header length (2 bytes in 1.0, 4 after), and a Python dict literal such as
// {'descr': '<f4', 'fortran_order': False, 'shape': (60000, 28, 28), } padded with spaces to a
// newline; then the elements. Read: little-endian f4, f8, i1, u1, i4, i8 (float32, float64, int8,
// uint8, int32, int64) in C order; big-endian data and fortran_order arrays are refused with the
// numpy line that rewrites them. As in idx.h, the header's claim is checked against the file's
// size before anything is allocated, and every error is an IoError naming the file and the offset.
//   Tensor x = data::read_npy("x.npy");           // float32 [N, 4] from np.save("x.npy", x)
//   data::write_npy("pred.npy", probs);           // np.load("pred.npy") reads it back
#pragma once

#include <cstdint>
#include <string>

#include "osprey/data/file_reader.h"
#include "osprey/tensor/tensor.h"

namespace osprey::data {

// What a .npy header says.
struct NpyHeader {
  int major_version = 1;
  DType dtype = DType::float32;
  Shape shape;                           // () for a 0-d array: one element
  uint64_t data_offset = 0;              // bytes before the first element
  uint64_t data_bytes() const noexcept;  // elements times itemsize
};

// Reads and checks the header at the start of f (f.offset() must be 0): the magic, the version,
// the dict, and that the data it claims fits in what the file can hold.
NpyHeader read_npy_header(FileReader& f);

// The whole array as one tensor of the header's shape and dtype (raw or gzip-compressed).
Tensor read_npy(const std::string& path);

// Writes t (float32, float64, int8, uint8, int32 or int64) as a version 1.0 .npy file, C order,
// as np.save writes it.
void write_npy(const std::string& path, const Tensor& t);

}  // namespace osprey::data
