#include "osprey/data/text/integer_lookup.h"

#include <utility>

#include "osprey/core/error.h"

namespace osprey::data::text {
namespace {

constexpr const char* kIntegerLookup = "IntegerLookup";

}  // namespace

IntegerLookup::IntegerLookup(IntegerLookupOptions options)
    : lookup_(detail::lookup_config<int64_t>(kIntegerLookup, options, std::nullopt),
              std::move(options.vocabulary), std::move(options.idf_weights)) {}

void IntegerLookup::adapt(const Tensor& values) {
  bool flat = false;
  const auto rows = detail::integer_rows(values, kIntegerLookup, flat);
  OSPREY_CHECK(!rows.empty(), "{}: adapt needs at least one value. Received: {}", kIntegerLookup,
               values.describe());
  lookup_.adapt(rows);
}

void IntegerLookup::set_vocabulary(std::vector<int64_t> vocabulary,
                                   std::vector<float> idf_weights) {
  lookup_.set_vocabulary(std::move(vocabulary), std::move(idf_weights));
}

std::vector<int64_t> IntegerLookup::get_vocabulary(bool include_special_tokens) const {
  return lookup_.get_vocabulary(include_special_tokens);
}

Tensor IntegerLookup::operator()(const Tensor& values) const {
  bool flat = false;
  const auto rows = detail::integer_rows(values, kIntegerLookup, flat);
  if (!lookup_.config().invert) return lookup_.encode(rows, flat);
  Tensor out = Tensor::empty(values.shape(), {DType::int64});
  int64_t* p = out.data<int64_t>();
  for (const auto& row : rows)
    for (int64_t i : row) *p++ = lookup_.token_at(i);
  return out;
}

IntegerLookup IntegerLookup::from_json(const nlohmann::json& j) {
  return IntegerLookup(detail::IndexLookup<int64_t>::from_json(j, kIntegerLookup));
}

}  // namespace osprey::data::text
