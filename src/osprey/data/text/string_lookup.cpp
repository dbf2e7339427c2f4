#include "osprey/data/text/string_lookup.h"

#include <utility>

#include "osprey/core/error.h"

namespace osprey::data::text {
namespace {

constexpr const char* kStringLookup = "StringLookup";

std::vector<std::vector<std::string>> one_per_row(const std::vector<std::string>& values) {
  std::vector<std::vector<std::string>> rows;
  rows.reserve(values.size());
  for (const auto& v : values) rows.push_back({v});
  return rows;
}

}  // namespace

StringLookup::StringLookup(StringLookupOptions options)
    : lookup_(detail::lookup_config<std::string>(kStringLookup, options, options.salt),
              std::move(options.vocabulary), std::move(options.idf_weights)) {}

void StringLookup::adapt(const std::vector<std::string>& values) { adapt(one_per_row(values)); }

void StringLookup::adapt(const std::vector<std::vector<std::string>>& rows) {
  OSPREY_CHECK(!rows.empty(), "{}: adapt needs at least one value. Received: none", kStringLookup);
  lookup_.adapt(rows);
}

void StringLookup::set_vocabulary(std::vector<std::string> vocabulary,
                                  std::vector<float> idf_weights) {
  lookup_.set_vocabulary(std::move(vocabulary), std::move(idf_weights));
}

std::vector<std::string> StringLookup::get_vocabulary(bool include_special_tokens) const {
  return lookup_.get_vocabulary(include_special_tokens);
}

Tensor StringLookup::operator()(const std::vector<std::string>& values) const {
  OSPREY_CHECK(!lookup_.config().invert,
               "{}: invert=true maps indices to strings: call it with an integer tensor",
               kStringLookup);
  return lookup_.encode(one_per_row(values), /*flat=*/true);
}

Tensor StringLookup::operator()(const std::vector<std::vector<std::string>>& rows) const {
  OSPREY_CHECK(!lookup_.config().invert,
               "{}: invert=true maps indices to strings: call it with an integer tensor",
               kStringLookup);
  return lookup_.encode(rows, /*flat=*/false);
}

std::vector<std::string> StringLookup::operator()(const Tensor& indices) const {
  OSPREY_CHECK(lookup_.config().invert,
               "{}: an integer tensor is looked up only with invert=true (indices to strings)",
               kStringLookup);
  bool flat = false;
  std::vector<std::string> out;
  for (const auto& row : detail::integer_rows(indices, kStringLookup, flat))
    for (int64_t i : row) out.push_back(lookup_.token_at(i));
  return out;
}

StringLookup StringLookup::from_json(const nlohmann::json& j) {
  return StringLookup(detail::IndexLookup<std::string>::from_json(j, kStringLookup));
}

}  // namespace osprey::data::text
