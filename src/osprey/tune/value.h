// Value: what a hyperparameter takes — a bool, an integer, a float or a string — with the JSON
// round trip trial files and the oracle's state need. Int and Boolean values stay integers and
// booleans in JSON, so a trial.json reads as KerasTuner's does.
//   Value v = "adam";  v.as_string();  Value(32).as_int();  to_json(Value(0.5)) == 0.5
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <variant>

namespace osprey::tune {

class Value {
 public:
  Value() : v_(int64_t{0}) {}
  Value(bool b) : v_(b) {}                      // NOLINT(google-explicit-constructor)
  Value(int i) : v_(int64_t{i}) {}              // NOLINT
  Value(int64_t i) : v_(i) {}                   // NOLINT
  Value(double d) : v_(d) {}                    // NOLINT
  Value(const char* s) : v_(std::string(s)) {}  // NOLINT
  Value(std::string s) : v_(std::move(s)) {}    // NOLINT
  // Out of line: g++ 12 under -fsanitize=address reports a false maybe-uninitialized in the
  // inlined variant<..., string> move.
  Value(const Value& other);
  Value(Value&& other) noexcept;
  Value& operator=(const Value& other);
  Value& operator=(Value&& other) noexcept;
  ~Value();

  bool is_bool() const { return std::holds_alternative<bool>(v_); }
  bool is_int() const { return std::holds_alternative<int64_t>(v_); }
  bool is_float() const { return std::holds_alternative<double>(v_); }
  bool is_string() const { return std::holds_alternative<std::string>(v_); }
  bool is_number() const { return is_int() || is_float(); }

  // ValueError naming the expected and actual type when the value holds another kind.
  bool as_bool() const;
  int64_t as_int() const;
  double as_double() const;  // integers convert
  const std::string& as_string() const;

  // "bool", "int", "float", "string".
  const char* type_name() const;
  // 32, 0.001, adam, true: as printed in summaries and tables.
  std::string to_string() const;

  friend bool operator==(const Value& a, const Value& b) { return a.v_ == b.v_; }

 private:
  std::variant<bool, int64_t, double, std::string> v_;
};

nlohmann::json to_json(const Value& v);
// ValueError naming `where` for null, arrays and objects.
Value value_from_json(const nlohmann::json& j, const std::string& where);

}  // namespace osprey::tune
