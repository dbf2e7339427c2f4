// The reading half of safetensors that trusts nothing: dtype codes, the header length, and every
// field of the JSON header checked against the file size before a single tensor is allocated.
#include <algorithm>
#include <array>
#include <charconv>

#include "osprey/core/error.h"
#include "osprey/io/json.h"
#include "osprey/io/safetensors.h"

namespace osprey::io {

namespace {

struct CodeOf {
  DType dtype;
  std::string_view code;
};
// Indexed by DType.
constexpr std::array<CodeOf, kNumDTypes> kCodes{{
    {DType::float64, "F64"},
    {DType::float32, "F32"},
    {DType::bfloat16, "BF16"},
    {DType::float16, "F16"},
    {DType::float8_e4m3fn, "F8_E4M3"},
    {DType::float8_e5m2, "F8_E5M2"},
    {DType::int8, "I8"},
    {DType::uint8, "U8"},
    {DType::int32, "I32"},
    {DType::int64, "I64"},
    {DType::boolean, "BOOL"},
}};
// Valid safetensors codes that have no osprey dtype: a clearer error than "unknown".
constexpr std::string_view kUnsupportedCodes[] = {"I16",     "U16", "U32",     "U64",    "C64",
                                                  "F8_E8M0", "F4",  "F6_E2M3", "F6_E3M2"};

[[noreturn]] void fail(std::string_view source, std::string_view what) {
  throw IoError(fmt::format("{}: {}", source, what));
}

[[noreturn]] void fail_tensor(std::string_view source, std::string_view name,
                              std::string_view what) {
  throw IoError(fmt::format("{}: tensor \"{}\": {}", source, name, what));
}

SafetensorsTensorInfo parse_tensor_entry(const JsonView& entry, const std::string& name,
                                         uint64_t data_offset, uint64_t data_bytes,
                                         std::string_view source) {
  SafetensorsTensorInfo info;
  info.name = name;
  if (!entry.is_object())
    entry.fail(fmt::format("must be an object, got {}", json_type_name(entry.json())));

  const std::string code = entry["dtype"].as<std::string>();
  const auto dtype = parse_safetensors_dtype(code);
  if (!dtype) {
    const bool known = std::find(std::begin(kUnsupportedCodes), std::end(kUnsupportedCodes),
                                 code) != std::end(kUnsupportedCodes);
    fail_tensor(
        source, name,
        known ? fmt::format("dtype \"{}\" is a safetensors dtype osprey does not support", code)
              : fmt::format("unknown dtype \"{}\" (expected one of F64, F32, BF16, F16, "
                            "F8_E4M3, F8_E5M2, I8, U8, I32, I64, BOOL)",
                            code));
  }
  info.dtype = *dtype;

  const JsonView shape = entry["shape"];
  if (!shape.is_array())
    shape.fail(fmt::format("must be an array, got {}", json_type_name(shape.json())));
  const size_t ndim = shape.size();
  if (ndim > static_cast<size_t>(kMaxDims)) {
    fail_tensor(source, name,
                fmt::format("shape has {} dimensions; osprey supports at most {}", ndim, kMaxDims));
  }
  uint64_t numel = 1;
  bool overflow = false;
  for (size_t i = 0; i < ndim; ++i) {
    const uint64_t d = shape[i].as<uint64_t>();
    if (d > static_cast<uint64_t>(INT64_MAX)) shape[i].fail(fmt::format("is {}, too large", d));
    info.shape.push_back(static_cast<int64_t>(d));
    overflow = overflow || __builtin_mul_overflow(numel, d, &numel);
  }
  uint64_t nbytes = 0;
  overflow = overflow || __builtin_mul_overflow(numel, dtype_size(info.dtype), &nbytes);

  const JsonView offsets = entry["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2) offsets.fail("must be an array [begin, end]");
  info.begin = offsets[0].as<uint64_t>();
  info.end = offsets[1].as<uint64_t>();
  const std::string span = fmt::format("data_offsets [{}, {}]", info.begin, info.end);
  if (info.end < info.begin) fail_tensor(source, name, span + " end before begin");
  if (info.end > data_bytes) {
    fail_tensor(source, name,
                fmt::format("{} out of bounds: end is at file offset {} but the file ends at {} "
                            "(data section of {} bytes starts at offset {})",
                            span, data_offset + info.end, data_offset + data_bytes, data_bytes,
                            data_offset));
  }
  if (overflow || nbytes != info.end - info.begin) {
    fail_tensor(source, name,
                fmt::format("size mismatch: shape {} of {} needs {} bytes but {} span {} bytes "
                            "(file offset {})",
                            info.shape.to_string(), code,
                            overflow ? std::string("more than 2^64") : std::to_string(nbytes), span,
                            info.end - info.begin, data_offset + info.begin));
  }
  return info;
}

void parse_metadata(const JsonView& meta, SafetensorsHeader& header, std::string_view source) {
  if (meta.is_null()) return;
  if (!meta.is_object())
    meta.fail(fmt::format("must be an object of strings, got {}", json_type_name(meta.json())));
  for (const auto& [key, value] : meta.items()) {
    std::string v = value.as<std::string>();
    if (key != kSafetensorsChecksumKey) {
      header.metadata.emplace(key, std::move(v));
      continue;
    }
    uint32_t crc = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), crc, 16);
    if (ec != std::errc() || end != v.data() + v.size() || v.size() != 8) {
      fail(source, fmt::format("__metadata__ \"{}\" must be 8 hex digits, got \"{}\"", key, v));
    }
    header.checksum = crc;
  }
}

}  // namespace

std::string_view safetensors_dtype_code(DType d) noexcept {
  return kCodes[static_cast<size_t>(d)].code;
}

std::optional<DType> parse_safetensors_dtype(std::string_view code) noexcept {
  for (const CodeOf& c : kCodes) {
    if (c.code == code) return c.dtype;
  }
  return std::nullopt;
}

namespace detail {

uint64_t check_safetensors_header_length(const unsigned char* first8, uint64_t file_size,
                                         std::string_view source) {
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | first8[i];  // little-endian on any host
  if (n > file_size - 8) {
    fail(source, fmt::format("header length {} (bytes 0-7) runs past the end of the file: only {} "
                             "bytes follow the length (truncated or not a safetensors file?)",
                             n, file_size - 8));
  }
  if (n > kSafetensorsMaxHeaderBytes) {
    fail(source, fmt::format("header length {} (bytes 0-7) exceeds the {}-byte limit", n,
                             kSafetensorsMaxHeaderBytes));
  }
  if (n < 2)
    fail(source, fmt::format("header length {} (bytes 0-7) is too small for a JSON object", n));
  return n;
}

SafetensorsHeader parse_safetensors_header(std::string_view text, uint64_t file_size,
                                           std::string_view source) {
  SafetensorsHeader header;
  header.header_bytes = text.size();
  header.data_offset = 8 + text.size();
  header.data_bytes = file_size - header.data_offset;
  if (text.empty() || text.front() != '{') {
    fail(source, fmt::format("header (file offset 8) must start with '{{', got byte 0x{:02x}",
                             text.empty() ? 0 : static_cast<unsigned char>(text.front())));
  }
  const std::string header_source = fmt::format("{} header", source);
  const nlohmann::json j = parse_json(text, header_source, true);
  const JsonView root(j, header_source, true);
  if (!root.is_object()) root.fail(fmt::format("must be an object, got {}", json_type_name(j)));

  for (const auto& [name, entry] : root.items()) {
    if (name == "__metadata__") {
      parse_metadata(entry, header, source);
    } else {
      header.tensors.push_back(
          parse_tensor_entry(entry, name, header.data_offset, header.data_bytes, source));
    }
  }

  // The data section must be covered exactly: sorted by offset, each tensor starts where the
  // previous one ended (the reference implementation's rule, which also rules out polyglots).
  auto& ts = header.tensors;
  std::sort(ts.begin(), ts.end(),
            [](const SafetensorsTensorInfo& a, const SafetensorsTensorInfo& b) {
              return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
            });
  uint64_t covered = 0;
  for (size_t i = 0; i < ts.size(); ++i) {
    if (ts[i].begin < covered) {
      fail_tensor(
          source, ts[i].name,
          fmt::format("data_offsets [{}, {}] overlap tensor \"{}\" [{}, {}] (file offset {})",
                      ts[i].begin, ts[i].end, ts[i - 1].name, ts[i - 1].begin, ts[i - 1].end,
                      header.data_offset + ts[i].begin));
    }
    if (ts[i].begin > covered) {
      fail(source, fmt::format("data bytes [{}, {}) (file offsets {}-{}) belong to no tensor: the "
                               "data section must have no holes",
                               covered, ts[i].begin, header.data_offset + covered,
                               header.data_offset + ts[i].begin));
    }
    covered = ts[i].end;
  }
  if (covered != header.data_bytes) {
    fail(source,
         fmt::format("the tensors cover {} of the {} data bytes: {} trailing bytes from file "
                     "offset {} belong to no tensor",
                     covered, header.data_bytes, header.data_bytes - covered,
                     header.data_offset + covered));
  }
  return header;
}

}  // namespace detail

}  // namespace osprey::io
