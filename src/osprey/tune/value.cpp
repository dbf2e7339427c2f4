#include "osprey/tune/value.h"

#include <fmt/format.h>

#include "osprey/core/error.h"

namespace osprey::tune {

Value::Value(const Value& other) = default;
Value::Value(Value&& other) noexcept = default;
Value& Value::operator=(const Value& other) = default;
Value& Value::operator=(Value&& other) noexcept = default;
Value::~Value() = default;

bool Value::as_bool() const {
  OSPREY_CHECK(is_bool(), "hyperparameter value: expected a bool, received {} {}", type_name(),
               to_string());
  return std::get<bool>(v_);
}

int64_t Value::as_int() const {
  OSPREY_CHECK(is_int(), "hyperparameter value: expected an int, received {} {}", type_name(),
               to_string());
  return std::get<int64_t>(v_);
}

double Value::as_double() const {
  if (is_int()) return static_cast<double>(std::get<int64_t>(v_));
  OSPREY_CHECK(is_float(), "hyperparameter value: expected a number, received {} {}", type_name(),
               to_string());
  return std::get<double>(v_);
}

const std::string& Value::as_string() const {
  OSPREY_CHECK(is_string(), "hyperparameter value: expected a string, received {} {}", type_name(),
               to_string());
  return std::get<std::string>(v_);
}

const char* Value::type_name() const {
  switch (v_.index()) {
    case 0:
      return "bool";
    case 1:
      return "int";
    case 2:
      return "float";
    default:
      return "string";
  }
}

std::string Value::to_string() const {
  switch (v_.index()) {
    case 0:
      return std::get<bool>(v_) ? "true" : "false";
    case 1:
      return fmt::format("{}", std::get<int64_t>(v_));
    case 2:
      return fmt::format("{:.6g}", std::get<double>(v_));
    default:
      return std::get<std::string>(v_);
  }
}

nlohmann::json to_json(const Value& v) {
  if (v.is_bool()) return v.as_bool();
  if (v.is_int()) return v.as_int();
  if (v.is_float()) return v.as_double();
  return v.as_string();
}

Value value_from_json(const nlohmann::json& j, const std::string& where) {
  if (j.is_boolean()) return Value(j.get<bool>());
  if (j.is_number_integer()) return Value(j.get<int64_t>());
  if (j.is_number_float()) return Value(j.get<double>());
  if (j.is_string()) return Value(j.get<std::string>());
  OSPREY_THROW(ValueError, "{}: a hyperparameter value must be a bool, number or string, got {}",
               where, j.dump());
}

}  // namespace osprey::tune
