// JSON helpers on nlohmann::json for configs, trial state and safetensors headers: parsing whose
// errors name the file and line:column, duplicate keys rejected (nlohmann silently keeps the
// last), atomic writes, and JsonView, typed field access whose errors name the file and the
// field path, e.g.  config.json: field "layers[2].units" must be an integer, got string
//   JsonDocument doc = JsonDocument::read("config.json");
//   int units = doc.root()["layers"][2]["units"].as<int>();
//   double lr = doc.root().get_or<double>("learning_rate", 1e-3);
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <filesystem>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace osprey::io {

// Parses text; `source` names it in errors ("config.json:3:14: invalid JSON: ..."). Throws
// IoError when is_file, else ValueError. Duplicate object keys are an error.
nlohmann::json parse_json(std::string_view text, std::string_view source, bool is_file = false);
nlohmann::json read_json_file(const std::filesystem::path& path);
// Writes j (pretty-printed with `indent` spaces, -1 for compact) plus a newline, atomically.
void write_json_file(const std::filesystem::path& path, const nlohmann::json& j, int indent = 2);
void write_json_file(const std::filesystem::path& path, const nlohmann::ordered_json& j,
                     int indent = 2);

// ValueError naming `where` and the value's path unless every floating-point number in j lies
// within +-bound. nlohmann converts a float to an integer with a plain cast, which is undefined
// behaviour past the integer's range, so a config whose integer fields may come as floats
// ("units": 1e81) is checked here before any field is read.
void check_float_magnitudes(const nlohmann::json& j, double bound, std::string_view where);
// The bound for configs whose integer fields are read as int: 2^31.
inline constexpr double kIntFieldBound = 2147483648.0;

// "null", "boolean", "integer", "float", "string", "array", "object".
std::string_view json_type_name(const nlohmann::json& j) noexcept;
// What a nlohmann exception says, without its tag: "key 'units' not found" for
// "[json.exception.out_of_range.403] key 'units' not found".
std::string json_exception_message(const nlohmann::json::exception& e);

namespace detail {
struct LineColumn {
  size_t line = 1, column = 1;  // both 1-based
};
// The line and column of the 0-based byte offset `byte` in text (clamped to its end).
LineColumn line_column(std::string_view text, size_t byte) noexcept;
}  // namespace detail

// A read-only cursor into a JSON value that remembers where it is ("layers[2].units") and in
// which source, so every type or presence error names both. Cheap to copy; it refers into the
// json it was made from, which must outlive it.
class JsonView {
 public:
  JsonView(const nlohmann::json& j, std::string source, bool is_file = false);

  // Child by key / index; a missing key, an index out of range, or a value that is not an
  // object / array throws, naming the path.
  JsonView operator[](std::string_view key) const;
  JsonView operator[](size_t index) const;
  std::optional<JsonView> find(std::string_view key) const;  // nullopt when absent
  bool contains(std::string_view key) const;
  size_t size() const;                     // elements of an array or members of an object
  std::vector<JsonView> elements() const;  // requires an array
  std::vector<std::pair<std::string, JsonView>> items() const;  // requires an object

  bool is_null() const noexcept { return j_->is_null(); }
  bool is_object() const noexcept { return j_->is_object(); }
  bool is_array() const noexcept { return j_->is_array(); }
  const nlohmann::json& json() const noexcept { return *j_; }
  const std::string& path() const noexcept { return path_; }  // "" at the root
  const std::string& source() const noexcept { return ctx_->source; }

  // Typed value: bool, any integer type (range-checked; floats such as 2.0 are refused),
  // float/double (integers accepted), std::string, std::vector of any of these.
  template <class T>
  T as() const;
  template <class T>
  T get(std::string_view key) const {
    return (*this)[key].template as<T>();
  }
  // The field's value, or fallback when the key is absent or null.
  template <class T>
  T get_or(std::string_view key, T fallback) const {
    auto v = find(key);
    return v && !v->is_null() ? v->template as<T>() : std::move(fallback);
  }

  // Throws the error kind of this source: "<source>: field \"<path>\" <message>".
  [[noreturn]] void fail(std::string_view message) const;
  // "field \"layers[2].units\"", or "the top-level value" at the root.
  std::string describe() const;

 private:
  struct Context {
    std::string source;
    bool is_file;
  };
  JsonView(const nlohmann::json* j, std::shared_ptr<const Context> ctx, std::string path)
      : j_(j), ctx_(std::move(ctx)), path_(std::move(path)) {}
  [[noreturn]] void type_error(std::string_view expected) const;
  bool as_bool() const;
  int64_t as_int64() const;
  uint64_t as_uint64() const;
  double as_double() const;
  std::string as_string() const;

  const nlohmann::json* j_;
  std::shared_ptr<const Context> ctx_;
  std::string path_;
};

// Owns a parsed document together with its source name.
//   auto doc = JsonDocument::read(dir / "config.json");  auto root = doc.root();
class JsonDocument {
 public:
  JsonDocument(nlohmann::json j, std::string source, bool is_file = false)
      : j_(std::make_unique<nlohmann::json>(std::move(j))),
        source_(std::move(source)),
        is_file_(is_file) {}
  static JsonDocument read(const std::filesystem::path& path) {
    return JsonDocument(read_json_file(path), path.string(), true);
  }
  JsonView root() const { return JsonView(*j_, source_, is_file_); }
  const nlohmann::json& json() const noexcept { return *j_; }

 private:
  std::unique_ptr<nlohmann::json> j_;  // stable address: views point into it
  std::string source_;
  bool is_file_;
};

namespace detail {
template <class T>
struct IsVector : std::false_type {};
template <class T, class A>
struct IsVector<std::vector<T, A>> : std::true_type {};
}  // namespace detail

template <class T>
T JsonView::as() const {
  if constexpr (std::is_same_v<T, bool>) {
    return as_bool();
  } else if constexpr (std::is_integral_v<T>) {
    if constexpr (std::is_signed_v<T>) {
      const int64_t v = as_int64();
      if constexpr (sizeof(T) < sizeof(int64_t)) {
        if (v < std::numeric_limits<T>::min() || v > std::numeric_limits<T>::max()) {
          fail(fmt::format("is {}, out of range for this field [{}, {}]", v,
                           std::numeric_limits<T>::min(), std::numeric_limits<T>::max()));
        }
      }
      return static_cast<T>(v);
    } else {
      const uint64_t v = as_uint64();
      if constexpr (sizeof(T) < sizeof(uint64_t)) {
        if (v > std::numeric_limits<T>::max()) {
          fail(fmt::format("is {}, out of range for this field [0, {}]", v,
                           std::numeric_limits<T>::max()));
        }
      }
      return static_cast<T>(v);
    }
  } else if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(as_double());
  } else if constexpr (std::is_same_v<T, std::string>) {
    return as_string();
  } else if constexpr (detail::IsVector<T>::value) {
    T out;
    for (const JsonView& e : elements()) out.push_back(e.template as<typename T::value_type>());
    return out;
  } else {
    static_assert(!sizeof(T), "JsonView::as: unsupported type");
  }
}

}  // namespace osprey::io
