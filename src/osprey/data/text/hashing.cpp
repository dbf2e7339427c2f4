#include "osprey/data/text/hashing.h"

#include "osprey/core/error.h"
#include "osprey/data/text/index_lookup.h"
#include "osprey/data/text/string_hash.h"

namespace osprey::data::text {
namespace {

constexpr const char* kHashing = "Hashing";

const HashingOptions& checked_hashing(const HashingOptions& o) {
  OSPREY_CHECK(o.num_bins > 0, "{}: num_bins must be positive. Received: num_bins={}", kHashing,
               o.num_bins);
  detail::check_output_mode(kHashing, o.output_mode, {"int", "one_hot", "multi_hot", "count"});
  return o;
}

}  // namespace

Hashing::Hashing(HashingOptions options) : options_(checked_hashing(options)) {}

int64_t Hashing::bin(const std::string& value) const {
  const bool masked = options_.mask_value && options_.num_bins > 1;
  if (masked && value == *options_.mask_value) return 0;
  const auto bins = static_cast<uint64_t>(options_.num_bins - (masked ? 1 : 0));
  const uint64_t h = options_.salt ? siphash64(value, *options_.salt) : fingerprint64(value);
  return static_cast<int64_t>(h % bins) + (masked ? 1 : 0);
}

Tensor Hashing::encode(const std::vector<std::vector<std::string>>& rows, bool flat) const {
  std::vector<std::vector<int64_t>> ids(rows.size());
  for (size_t i = 0; i < rows.size(); ++i)
    for (const auto& v : rows[i]) ids[i].push_back(bin(v));
  return detail::encode_categorical(ids, {.layer = kHashing,
                                          .output_mode = options_.output_mode,
                                          .depth = options_.num_bins,
                                          .flat = flat});
}

Tensor Hashing::operator()(const std::vector<std::string>& values) const {
  std::vector<std::vector<std::string>> rows;
  rows.reserve(values.size());
  for (const auto& v : values) rows.push_back({v});
  return encode(rows, /*flat=*/true);
}

Tensor Hashing::operator()(const std::vector<std::vector<std::string>>& rows) const {
  return encode(rows, /*flat=*/false);
}

Tensor Hashing::operator()(const Tensor& values) const {
  bool flat = false;
  const auto ints = detail::integer_rows(values, kHashing, flat);
  std::vector<std::vector<std::string>> rows(ints.size());
  for (size_t i = 0; i < ints.size(); ++i)
    for (int64_t v : ints[i]) rows[i].push_back(std::to_string(v));
  return encode(rows, flat);
}

}  // namespace osprey::data::text
