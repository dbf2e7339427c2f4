#include "osprey/tune/search_space_toml.h"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <vector>

#include "osprey/core/error.h"

namespace osprey::tune {

namespace {

// The fields each type takes besides `type`; null for an unknown type. Every type also takes a
// condition: parent_name and parent_values (KerasTuner's conditional_scope).
const std::vector<std::string>* fields_of(const std::string& type) {
  static const std::map<std::string, std::vector<std::string>> fields = {
      {"int", {"min", "max", "step", "sampling", "default", "parent_name", "parent_values"}},
      {"float", {"min", "max", "step", "sampling", "default", "parent_name", "parent_values"}},
      {"choice", {"values", "ordered", "default", "parent_name", "parent_values"}},
      {"boolean", {"default", "parent_name", "parent_values"}},
      {"fixed", {"value", "parent_name", "parent_values"}},
  };
  const auto it = fields.find(type);
  return it == fields.end() ? nullptr : &it->second;
}

// One hyperparameter's table; every error names the source, the table and the field.
class Table {
 public:
  Table(const toml::table& t, std::string where) : t_(t), where_(std::move(where)) {}

  const std::string& where() const { return where_; }
  const toml::table& table() const { return t_; }
  const toml::node* find(const char* field) const { return t_.get(field); }

  const toml::node& need(const char* field, const std::string& type) const {
    const toml::node* n = find(field);
    OSPREY_CHECK(n != nullptr, "{}: type \"{}\" needs '{}'", where_, type, field);
    return *n;
  }
  int64_t as_int(const toml::node& n, const char* field) const {
    OSPREY_CHECK(n.is_integer(), "{}.{}: must be an integer. Received: {}", where_, field,
                 toml_text(n));
    return *n.value<int64_t>();
  }
  double as_number(const toml::node& n, const char* field) const {
    OSPREY_CHECK(n.is_number(), "{}.{}: must be a number. Received: {}", where_, field,
                 toml_text(n));
    return *n.value<double>();
  }
  Value as_value(const toml::node& n, const char* field) const {
    if (n.is_boolean()) return Value(*n.value<bool>());
    if (n.is_integer()) return Value(*n.value<int64_t>());
    if (n.is_floating_point()) return Value(*n.value<double>());
    if (n.is_string()) return Value(*n.value<std::string>());
    OSPREY_THROW(ValueError, "{}.{}: must be a boolean, a number or a string. Received: {}", where_,
                 field, toml_text(n));
  }
  std::optional<int64_t> optional_int(const char* field) const {
    const toml::node* n = find(field);
    return n ? std::optional(as_int(*n, field)) : std::nullopt;
  }
  std::optional<double> optional_number(const char* field) const {
    const toml::node* n = find(field);
    return n ? std::optional(as_number(*n, field)) : std::nullopt;
  }
  std::string string(const char* field, std::string fallback) const {
    const toml::node* n = find(field);
    if (n == nullptr) return fallback;
    OSPREY_CHECK(n->is_string(), "{}.{}: must be a string. Received: {}", where_, field,
                 toml_text(*n));
    return *n->value<std::string>();
  }

 private:
  static std::string toml_text(const toml::node& n) {
    std::ostringstream s;
    n.visit([&](const auto& v) { s << v; });
    return s.str();
  }

  const toml::table& t_;
  std::string where_;
};

void declare(HyperParameters& hp, const std::string& name, const Table& t) {
  const std::string type = t.string("type", "");
  const std::vector<std::string>* fields = fields_of(type);
  OSPREY_CHECK(fields != nullptr,
               "{}.type: must be \"int\", \"float\", \"choice\", \"boolean\" or \"fixed\". "
               "Received: {}",
               t.where(), type.empty() ? "nothing" : fmt::format("\"{}\"", type));
  for (auto&& [key, value] : t.table()) {
    OSPREY_CHECK(key == "type" || std::find(fields->begin(), fields->end(), key) != fields->end(),
                 "{}: unknown field '{}' (type \"{}\" takes {})", t.where(), key.str(), type,
                 fmt::join(*fields, ", "));
  }
  // A child is declared inside its parent's conditional scope: active only when the parent
  // (declared earlier in the file) takes one of parent_values.
  const toml::node* parent = t.find("parent_name");
  const toml::node* parent_values = t.find("parent_values");
  OSPREY_CHECK((parent == nullptr) == (parent_values == nullptr),
               "{}: parent_name and parent_values go together (the hyperparameter is active only "
               "when parent_name takes one of parent_values)",
               t.where());
  std::optional<HyperParameters::ConditionalScope> scope;
  if (parent != nullptr) {
    const toml::array* values = parent_values->as_array();
    OSPREY_CHECK(values != nullptr && !values->empty(),
                 "{}.parent_values: must be a non-empty array", t.where());
    std::vector<Value> vs;
    for (const toml::node& v : *values) vs.push_back(t.as_value(v, "parent_values"));
    scope.emplace(hp.conditional_scope(t.string("parent_name", ""), std::move(vs)));
  }
  if (type == "int") {
    hp.Int(name, t.as_int(t.need("min", type), "min"), t.as_int(t.need("max", type), "max"),
           {.step = t.optional_int("step"),
            .sampling = t.string("sampling", "linear"),
            .default_value = t.optional_int("default")});
  } else if (type == "float") {
    hp.Float(name, t.as_number(t.need("min", type), "min"), t.as_number(t.need("max", type), "max"),
             {.step = t.optional_number("step"),
              .sampling = t.string("sampling", "linear"),
              .default_value = t.optional_number("default")});
  } else if (type == "choice") {
    const toml::array* values = t.need("values", type).as_array();
    OSPREY_CHECK(values != nullptr && !values->empty(), "{}.values: must be a non-empty array",
                 t.where());
    std::vector<Value> vs;
    for (const toml::node& v : *values) vs.push_back(t.as_value(v, "values"));
    std::optional<Value> default_value;
    if (const toml::node* d = t.find("default")) default_value = t.as_value(*d, "default");
    std::optional<bool> ordered;
    if (const toml::node* o = t.find("ordered")) {
      OSPREY_CHECK(o->is_boolean(), "{}.ordered: must be true or false", t.where());
      ordered = *o->value<bool>();
    }
    hp.retrieve(HyperParameter::Choice(name, std::move(vs), ordered, default_value));
  } else if (type == "boolean") {
    const toml::node* d = t.find("default");
    OSPREY_CHECK(d == nullptr || d->is_boolean(), "{}.default: must be true or false", t.where());
    hp.Boolean(name, {.default_value = d != nullptr && *d->value<bool>()});
  } else {
    hp.retrieve(HyperParameter::Fixed(name, t.as_value(t.need("value", type), "value")));
  }
}

}  // namespace

HyperParameters hyperparameters_from_toml_text(std::string_view text, const std::string& source) {
  toml::table root;
  try {
    root = toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    OSPREY_THROW(ValueError, "{}:{}:{}: invalid TOML: {}", source, e.source().begin.line,
                 e.source().begin.column, e.description());
  }
  // toml::table keeps its keys sorted; the space keeps the file's order.
  std::vector<std::pair<std::string, const toml::node*>> entries;
  for (auto&& [key, node] : root) entries.emplace_back(std::string(key.str()), &node);
  std::stable_sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) {
    return a.second->source().begin < b.second->source().begin;
  });
  HyperParameters hp;
  for (const auto& [name, node] : entries) {
    const std::string where = fmt::format("{}: [{}]", source, name);
    const toml::table* t = node->as_table();
    OSPREY_CHECK(t != nullptr, "{}: must be a table ([{}] with type = ...)", where, name);
    const Table table(*t, where);
    try {
      declare(hp, name, table);
    } catch (const ValueError& e) {
      const std::string what = e.what();
      if (what.starts_with(where)) throw;
      OSPREY_THROW(ValueError, "{}: {}", where, what);
    }
  }
  return hp.copy_space();  // declaring gave each its default as a value
}

HyperParameters hyperparameters_from_toml(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  OSPREY_CHECK_T(IoError, in.good(), "{}: cannot open the search space file", path.string());
  std::ostringstream text;
  text << in.rdbuf();
  OSPREY_CHECK_T(IoError, !in.bad(), "{}: cannot read the search space file", path.string());
  return hyperparameters_from_toml_text(text.str(), path.string());
}

HyperParameters hyperparameters_from_toml(const std::filesystem::path& path,
                                          const HyperParameters& model_space) {
  HyperParameters hp = hyperparameters_from_toml(path);
  std::vector<std::string> reads;
  for (const HyperParameter& d : model_space.space()) reads.push_back(d.name);
  for (const HyperParameter& h : hp.space()) {
    const HyperParameter* found = model_space.find(h.name);
    OSPREY_CHECK(found != nullptr, "{}: the model reads no hyperparameter '{}' (it reads {})",
                 path.string(), h.name, fmt::join(reads, ", "));
    // The model needs the same kind of value its own space gives.
    const Value& probe = h.default_value;
    const Value& want = found->default_value;
    OSPREY_CHECK((probe.is_string() == want.is_string()) &&
                     (probe.is_number() == want.is_number()) &&
                     (found->type != HpType::Int || probe.is_int()),
                 "{}: [{}]: the model needs {} values for '{}', the file gives {}", path.string(),
                 h.name, want.type_name(), h.name, probe.type_name());
  }
  for (const HyperParameter& d : model_space.space()) {
    if (hp.find(d.name) == nullptr) hp.retrieve(HyperParameter::Fixed(d.name, d.default_value));
  }
  return hp;
}

}  // namespace osprey::tune
