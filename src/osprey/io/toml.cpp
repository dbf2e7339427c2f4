#include "osprey/io/toml.h"

#include <toml++/toml.h>

#include <sstream>

#include "osprey/core/error.h"
#include "osprey/io/posix_file.h"

namespace osprey::io {

namespace {

nlohmann::json to_json(const toml::node& node) {
  if (const toml::table* t = node.as_table()) {
    nlohmann::json j = nlohmann::json::object();
    for (auto&& [key, value] : *t) j[std::string(key.str())] = to_json(value);
    return j;
  }
  if (const toml::array* a = node.as_array()) {
    nlohmann::json j = nlohmann::json::array();
    for (const toml::node& value : *a) j.push_back(to_json(value));
    return j;
  }
  if (node.is_string()) return *node.value<std::string>();
  if (node.is_integer()) return *node.value<int64_t>();
  if (node.is_floating_point()) return *node.value<double>();
  if (node.is_boolean()) return *node.value<bool>();
  std::ostringstream text;  // a date, a time or a date-time: its TOML spelling
  node.visit([&](const auto& v) { text << v; });
  return text.str();
}

}  // namespace

nlohmann::json toml_to_json(std::string_view text, const std::string& source) {
  try {
    return to_json(toml::parse(text, source));
  } catch (const toml::parse_error& e) {
    OSPREY_THROW(ValueError, "{}:{}:{}: invalid TOML: {}", source, e.source().begin.line,
                 e.source().begin.column, e.description());
  }
}

nlohmann::json read_toml_file(const std::filesystem::path& path) {
  return toml_to_json(read_file(path), path.string());
}

}  // namespace osprey::io
