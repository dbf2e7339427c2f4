// safetensors, the Hugging Face weight format, read and written exactly as the reference (Rust)
// implementation does: 8-byte little-endian header length N, N bytes of JSON header
//   {"__metadata__": {"k": "v"}, "name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0,
//   24]}}
// padded with spaces to a multiple of 8, then the raw little-endian, row-major data with no holes.
// The writer orders tensors as the reference does (descending dtype alignment, then name), so
// every tensor is aligned to its element size; saves are atomic (atomic_file.h) and, by default,
// store the CRC32C of the data section under __metadata__["osprey.crc32c"], which the loader
// verifies and hides. Loading checks the whole header against the file size before it allocates
// anything: a corrupt or hostile file gives an IoError naming the file, the tensor and the field
// or byte offset, never a crash or a huge allocation.
//   save_safetensors("model.safetensors", {{"dense/kernel", w}, {"dense/bias", b}}, {{"format",
//   "pt"}}); SafetensorsFile f = load_safetensors("model.safetensors"); const Tensor& w =
//   f.at("dense/kernel");
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "osprey/core/dtype.h"
#include "osprey/core/shape.h"
#include "osprey/tensor/tensor.h"

namespace osprey::io {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;
using SafetensorsMetadata = std::map<std::string, std::string>;

// The __metadata__ key holding the data section's CRC32C as 8 lower-case hex digits.
inline constexpr std::string_view kSafetensorsChecksumKey = "osprey.crc32c";
// The reference implementation refuses headers above 100 MB; so does osprey.
inline constexpr uint64_t kSafetensorsMaxHeaderBytes = 100'000'000;

// "F64", "F32", "BF16", "F16", "F8_E4M3", "F8_E5M2", "I8", "U8", "I32", "I64", "BOOL".
std::string_view safetensors_dtype_code(DType d) noexcept;
std::optional<DType> parse_safetensors_dtype(std::string_view code) noexcept;

struct SafetensorsSaveOptions {
  bool checksum = true;  // store kSafetensorsChecksumKey; off gives the reference's exact bytes
};

// Writes the tensors (any layout: non-contiguous ones are written contiguous) atomically.
// Throws ValueError for duplicate or empty names, "__metadata__" as a name, or a metadata key
// equal to kSafetensorsChecksumKey; IoError when the file cannot be written.
void save_safetensors(const std::filesystem::path& path, const NamedTensors& tensors,
                      const SafetensorsMetadata& metadata = {},
                      SafetensorsSaveOptions options = {});
// The same bytes in memory (for tests and for sending weights over the wire).
std::string serialize_safetensors(const NamedTensors& tensors,
                                  const SafetensorsMetadata& metadata = {},
                                  SafetensorsSaveOptions options = {});

struct SafetensorsTensorInfo {
  std::string name;
  DType dtype;
  Shape shape;
  uint64_t begin = 0, end = 0;  // data_offsets, relative to the data section
};

// A validated header: every tensor's dtype, shape and span checked against the file size.
struct SafetensorsHeader {
  std::vector<SafetensorsTensorInfo> tensors;  // sorted by data offset
  SafetensorsMetadata metadata;                // without kSafetensorsChecksumKey
  std::optional<uint32_t> checksum;            // the stored CRC32C of the data section, if any
  uint64_t header_bytes = 0;                   // N
  uint64_t data_offset = 0;                    // 8 + N: where the data section starts
  uint64_t data_bytes = 0;
};

// Reads and validates only the header (no tensor data is read).
SafetensorsHeader read_safetensors_header(const std::filesystem::path& path);

struct SafetensorsLoadOptions {
  bool verify_checksum = true;  // when the file stores one
};

// Loaded tensors in file (data offset) order, with lookup by name.
struct SafetensorsFile {
  NamedTensors tensors;
  SafetensorsMetadata metadata;  // without kSafetensorsChecksumKey
  bool checksum_verified = false;

  const Tensor* find(std::string_view name) const noexcept;
  const Tensor& at(std::string_view name) const;  // ValueError naming the missing tensor
  bool contains(std::string_view name) const noexcept { return find(name) != nullptr; }
  size_t size() const noexcept { return tensors.size(); }
};

SafetensorsFile load_safetensors(const std::filesystem::path& path,
                                 SafetensorsLoadOptions options = {});
// Parses bytes produced by serialize_safetensors (or any safetensors file read into memory);
// `source` names it in errors.
SafetensorsFile deserialize_safetensors(std::string_view bytes,
                                        std::string_view source = "<memory>",
                                        SafetensorsLoadOptions options = {});

namespace detail {
// Validates a header given its text, its declared length N and the total size of the file;
// safetensors_header.cpp. The caller has checked that 8 + N <= file_size.
SafetensorsHeader parse_safetensors_header(std::string_view header_text, uint64_t file_size,
                                           std::string_view source);
// Checks the 8-byte length against the file size and the limit; returns N.
uint64_t check_safetensors_header_length(const unsigned char* first8, uint64_t file_size,
                                         std::string_view source);
}  // namespace detail

}  // namespace osprey::io
