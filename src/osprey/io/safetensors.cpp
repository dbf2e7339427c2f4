#include "osprey/io/safetensors.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <nlohmann/json.hpp>
#include <numeric>
#include <set>

#include "osprey/core/error.h"
#include "osprey/io/atomic_file.h"
#include "osprey/io/crc32c.h"
#include "osprey/io/posix_file.h"

namespace osprey::io {

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; a big-endian host would need byte swaps");

namespace {

// Position in the reference implementation's Dtype enum, which is declared "in increasing
// alignment order"; its writer sorts by this, descending, then by name.
int reference_rank(DType d) noexcept {
  switch (d) {
    case DType::boolean:
      return 0;
    case DType::uint8:
      return 1;
    case DType::int8:
      return 2;
    case DType::float8_e5m2:
      return 3;
    case DType::float8_e4m3fn:
      return 4;
    case DType::float16:
      return 7;  // I16 = 5, U16 = 6
    case DType::bfloat16:
      return 8;
    case DType::int32:
      return 9;  // U32 = 10
    case DType::float32:
      return 11;
    case DType::float64:
      return 12;
    case DType::int64:
      return 13;
  }
  return 0;
}

struct Prepared {
  std::string head;          // 8-byte length + padded JSON header
  std::vector<Tensor> data;  // contiguous CPU tensors in file order
};

Prepared prepare(const NamedTensors& tensors, const SafetensorsMetadata& metadata,
                 SafetensorsSaveOptions options, std::string_view where) {
  std::set<std::string_view> seen;
  for (const auto& [name, t] : tensors) {
    OSPREY_CHECK(!name.empty(), "{}: safetensors tensor names must be non-empty", where);
    OSPREY_CHECK(name != "__metadata__",
                 "{}: \"__metadata__\" is reserved and cannot name a tensor", where);
    OSPREY_CHECK(seen.insert(name).second, "{}: duplicate tensor name \"{}\"", where, name);
    OSPREY_CHECK(t.defined(), "{}: tensor \"{}\" is undefined", where, name);
  }
  OSPREY_CHECK(!options.checksum || metadata.count(std::string(kSafetensorsChecksumKey)) == 0,
               "{}: metadata key \"{}\" is reserved for the checksum osprey stores", where,
               kSafetensorsChecksumKey);

  std::vector<size_t> order(tensors.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const int ra = reference_rank(tensors[a].second.dtype());
    const int rb = reference_rank(tensors[b].second.dtype());
    return ra != rb ? ra > rb : tensors[a].first < tensors[b].first;
  });

  Prepared p;
  p.data.reserve(order.size());
  nlohmann::ordered_json entries = nlohmann::ordered_json::object();
  uint64_t offset = 0;
  uint32_t crc = 0;
  for (size_t i : order) {
    const auto& [name, t] = tensors[i];
    Tensor c = t.device().is_cpu() ? t : t.to(Device::cpu(0));
    c = c.contiguous();
    nlohmann::ordered_json shape = nlohmann::ordered_json::array();
    for (int64_t d : c.shape()) shape.push_back(d);
    nlohmann::ordered_json e = nlohmann::ordered_json::object();
    e["dtype"] = safetensors_dtype_code(c.dtype());
    e["shape"] = std::move(shape);
    e["data_offsets"] = nlohmann::ordered_json::array({offset, offset + c.nbytes()});
    entries[name] = std::move(e);
    offset += c.nbytes();
    if (options.checksum && c.nbytes() > 0) crc = crc32c(c.raw_data(), c.nbytes(), crc);
    p.data.push_back(std::move(c));
  }

  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty() || options.checksum) {
    nlohmann::ordered_json m = nlohmann::ordered_json::object();
    for (const auto& [k, v] : metadata) m[k] = v;
    if (options.checksum) m[std::string(kSafetensorsChecksumKey)] = fmt::format("{:08x}", crc);
    header["__metadata__"] = std::move(m);
  }
  for (auto& [k, v] : entries.items()) header[k] = std::move(v);

  std::string json;
  try {
    json = header.dump(-1, ' ', false, nlohmann::detail::error_handler_t::strict);
  } catch (const nlohmann::json::exception& e) {
    OSPREY_THROW(ValueError, "{}: tensor names and metadata must be valid UTF-8: {}", where,
                 e.what());
  }
  json.append((8 - json.size() % 8) % 8, ' ');  // as the reference: data starts 8-byte aligned
  uint64_t n = json.size();
  p.head.resize(8);
  for (int i = 0; i < 8; ++i, n >>= 8)
    p.head[static_cast<size_t>(i)] = static_cast<char>(n & 0xffu);
  p.head += json;
  return p;
}

template <class Sink>
void emit(const Prepared& p, Sink&& sink) {
  sink(p.head.data(), p.head.size());
  for (const Tensor& t : p.data) {
    if (t.nbytes() > 0) sink(t.raw_data(), t.nbytes());
  }
}

// Allocates and fills every tensor of a validated header; read(dst, n, file_offset) copies bytes.
template <class Read>
SafetensorsFile read_tensors(const SafetensorsHeader& h, Read&& read, std::string_view source,
                             SafetensorsLoadOptions options) {
  SafetensorsFile out;
  out.metadata = h.metadata;
  out.tensors.reserve(h.tensors.size());
  const bool verify = options.verify_checksum && h.checksum.has_value();
  uint32_t crc = 0;
  for (const SafetensorsTensorInfo& info : h.tensors) {
    Tensor t = Tensor::empty(info.shape, {info.dtype, Device::cpu(0)});
    const size_t n = static_cast<size_t>(info.end - info.begin);
    if (n > 0) {
      read(t.raw_data(), n, h.data_offset + info.begin);
      if (verify) crc = crc32c(t.raw_data(), n, crc);
    }
    if (info.dtype == DType::boolean) {
      const auto* b = static_cast<const unsigned char*>(t.raw_data());
      for (size_t i = 0; i < n; ++i) {
        if (b[i] > 1) {
          throw IoError(
              fmt::format("{}: tensor \"{}\": BOOL byte at file offset {} is {}, expected 0 or 1",
                          source, info.name, h.data_offset + info.begin + i, b[i]));
        }
      }
    }
    out.tensors.emplace_back(info.name, std::move(t));
  }
  if (verify) {
    if (crc != *h.checksum) {
      throw IoError(
          fmt::format("{}: checksum mismatch: the data section (file offsets {}-{}) has "
                      "CRC32C {:08x} but the header records {:08x}; the file is corrupt",
                      source, h.data_offset, h.data_offset + h.data_bytes, crc, *h.checksum));
    }
    out.checksum_verified = true;
  }
  return out;
}

}  // namespace

void save_safetensors(const std::filesystem::path& path, const NamedTensors& tensors,
                      const SafetensorsMetadata& metadata, SafetensorsSaveOptions options) {
  const Prepared p = prepare(tensors, metadata, options, path.string());
  AtomicFileWriter w(path, {.checksum = false});  // the payload CRC is in the header already
  emit(p, [&](const void* d, size_t n) { w.write(d, n); });
  w.commit();
}

std::string serialize_safetensors(const NamedTensors& tensors, const SafetensorsMetadata& metadata,
                                  SafetensorsSaveOptions options) {
  const Prepared p = prepare(tensors, metadata, options, "serialize_safetensors");
  std::string out;
  emit(p, [&](const void* d, size_t n) { out.append(static_cast<const char*>(d), n); });
  return out;
}

namespace {
SafetensorsHeader read_header(const File& f, const std::string& source) {
  const uint64_t size = f.size();
  if (size < 8) {
    throw IoError(
        fmt::format("{}: file is {} bytes, too short for the 8-byte header length "
                    "(truncated or not a safetensors file?)",
                    source, size));
  }
  unsigned char len[8];
  f.read_exact_at(len, 8, 0);
  const uint64_t n = detail::check_safetensors_header_length(len, size, source);
  std::string text(static_cast<size_t>(n), '\0');  // n <= file size and <= 100 MB: checked
  f.read_exact_at(text.data(), text.size(), 8);
  return detail::parse_safetensors_header(text, size, source);
}
}  // namespace

SafetensorsHeader read_safetensors_header(const std::filesystem::path& path) {
  return read_header(File::open_read(path), path.string());
}

SafetensorsFile load_safetensors(const std::filesystem::path& path,
                                 SafetensorsLoadOptions options) {
  const File f = File::open_read(path);  // one descriptor: header and data of the same file
  const SafetensorsHeader h = read_header(f, path.string());
  return read_tensors(
      h, [&](void* dst, size_t n, uint64_t offset) { f.read_exact_at(dst, n, offset); },
      path.string(), options);
}

SafetensorsFile deserialize_safetensors(std::string_view bytes, std::string_view source,
                                        SafetensorsLoadOptions options) {
  if (bytes.size() < 8) {
    throw IoError(
        fmt::format("{}: {} bytes, too short for the 8-byte header length", source, bytes.size()));
  }
  const uint64_t n = detail::check_safetensors_header_length(
      reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), source);
  const SafetensorsHeader h = detail::parse_safetensors_header(
      bytes.substr(8, static_cast<size_t>(n)), bytes.size(), source);
  return read_tensors(
      h,
      [&](void* dst, size_t len, uint64_t offset) { std::memcpy(dst, bytes.data() + offset, len); },
      source, options);
}

const Tensor* SafetensorsFile::find(std::string_view name) const noexcept {
  for (const auto& [n, t] : tensors) {
    if (n == name) return &t;
  }
  return nullptr;
}

const Tensor& SafetensorsFile::at(std::string_view name) const {
  if (const Tensor* t = find(name)) return *t;
  std::string names;
  for (size_t i = 0; i < tensors.size() && i < 8; ++i) names += (i ? ", " : "") + tensors[i].first;
  if (tensors.size() > 8) names += ", ...";
  OSPREY_THROW(ValueError, "safetensors: no tensor named \"{}\"; the file holds {} tensors: {}",
               name, tensors.size(), names);
}

}  // namespace osprey::io
