#include "osprey/io/json.h"

#include <algorithm>
#include <set>

#include "osprey/core/error.h"
#include "osprey/io/atomic_file.h"
#include "osprey/io/posix_file.h"

namespace osprey::io {

namespace {

using nlohmann::json;

[[noreturn]] void throw_kind(bool is_file, const std::string& message) {
  if (is_file) throw IoError(message);
  throw ValueError(message);
}

// nlohmann's what() reads "[json.exception.parse_error.101] parse error at line 1, column 5:
// syntax error ..."; keep the part after the location, which we print ourselves.
std::string parse_error_detail(const json::parse_error& e) {
  const std::string what = e.what();
  const size_t at = what.find("column ");
  const size_t colon = at == std::string::npos ? std::string::npos : what.find(": ", at);
  if (colon != std::string::npos) return what.substr(colon + 2);
  const size_t bracket = what.find("] ");
  return bracket == std::string::npos ? what : what.substr(bracket + 2);
}

// Tracks where the parser is, to reject duplicate keys and name the path where one occurs.
class DuplicateKeyGuard {
 public:
  bool operator()(int /*depth*/, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
        frames_.push_back({false, 0, {}, {}});
        break;
      case json::parse_event_t::array_start:
        frames_.push_back({true, 0, {}, {}});
        break;
      case json::parse_event_t::key: {
        Frame& f = frames_.back();
        f.key = parsed.get<std::string>();
        if (!f.keys.insert(f.key).second) duplicate_ = path();
        break;
      }
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        frames_.pop_back();
        value_done();
        break;
      case json::parse_event_t::value:
        value_done();
        break;
    }
    return true;
  }
  const std::optional<std::string>& duplicate() const { return duplicate_; }

 private:
  struct Frame {
    bool array;
    size_t index;
    std::string key;
    std::set<std::string> keys;
  };
  void value_done() {
    if (!frames_.empty() && frames_.back().array) ++frames_.back().index;
  }
  std::string path() const {
    std::string p;
    for (const Frame& f : frames_) {
      if (f.array) {
        p += fmt::format("[{}]", f.index);
      } else {
        p += p.empty() ? f.key : "." + f.key;
      }
    }
    return p;
  }
  std::vector<Frame> frames_;
  std::optional<std::string> duplicate_;
};

}  // namespace

namespace detail {

LineColumn line_column(std::string_view text, size_t byte) noexcept {
  byte = std::min(byte, text.size());
  const std::string_view before = text.substr(0, byte);
  LineColumn lc;
  lc.line = 1 + static_cast<size_t>(std::count(before.begin(), before.end(), '\n'));
  const size_t nl = before.rfind('\n');
  lc.column = nl == std::string_view::npos ? byte + 1 : byte - nl;
  return lc;
}

}  // namespace detail

nlohmann::json parse_json(std::string_view text, std::string_view source, bool is_file) {
  DuplicateKeyGuard guard;
  json j;
  try {
    j = json::parse(text.begin(), text.end(), std::ref(guard));
  } catch (const json::parse_error& e) {
    // e.byte is the 1-based index of the last character read: the one that broke the parse.
    const auto lc = detail::line_column(text, e.byte > 0 ? e.byte - 1 : 0);
    throw_kind(is_file, fmt::format("{}:{}:{}: invalid JSON: {}", source, lc.line, lc.column,
                                    parse_error_detail(e)));
  } catch (const json::exception& e) {
    // The parser's other refusal: a number past a double's range ("1e999"), which has no byte
    // position.
    throw_kind(is_file, fmt::format("{}: invalid JSON: {}", source, json_exception_message(e)));
  }
  if (guard.duplicate()) {
    throw_kind(is_file,
               fmt::format("{}: invalid JSON: duplicate key \"{}\"", source, *guard.duplicate()));
  }
  return j;
}

std::string json_exception_message(const nlohmann::json::exception& e) {
  const std::string what = e.what();
  const size_t bracket = what.starts_with("[json.exception.") ? what.find("] ") : std::string::npos;
  return bracket == std::string::npos ? what : what.substr(bracket + 2);
}

namespace {
void check_floats(const json& j, double bound, std::string_view where, std::string& path) {
  if (j.is_number_float()) {
    const double v = j.get<double>();
    if (!(v >= -bound && v <= bound))
      OSPREY_THROW(ValueError, "{}: {} is {:g}, past the +-{:g} a number here may take", where,
                   path.empty() ? std::string("the value") : path, v, bound);
  } else if (j.is_array()) {
    for (size_t i = 0; i < j.size(); ++i) {
      const size_t n = path.size();
      path += fmt::format("[{}]", i);
      check_floats(j[i], bound, where, path);
      path.resize(n);
    }
  } else if (j.is_object()) {
    for (const auto& [key, value] : j.items()) {
      const size_t n = path.size();
      path += path.empty() ? key : "." + key;
      check_floats(value, bound, where, path);
      path.resize(n);
    }
  }
}
}  // namespace

void check_float_magnitudes(const nlohmann::json& j, double bound, std::string_view where) {
  std::string path;
  check_floats(j, bound, where, path);
}

nlohmann::json read_json_file(const std::filesystem::path& path) {
  const std::string text = read_file(path);
  return parse_json(text, path.string(), true);
}

namespace {
template <class J>
void write_json_impl(const std::filesystem::path& path, const J& j, int indent) {
  std::string text;
  try {
    text = j.dump(indent, ' ', false, nlohmann::detail::error_handler_t::strict);
  } catch (const nlohmann::json::exception& e) {
    OSPREY_THROW(ValueError, "{}: cannot serialize JSON: {}", path.string(), e.what());
  }
  text += '\n';
  atomic_write_file(path, text);
}
}  // namespace

void write_json_file(const std::filesystem::path& path, const nlohmann::json& j, int indent) {
  write_json_impl(path, j, indent);
}
void write_json_file(const std::filesystem::path& path, const nlohmann::ordered_json& j,
                     int indent) {
  write_json_impl(path, j, indent);
}

std::string_view json_type_name(const nlohmann::json& j) noexcept {
  switch (j.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::boolean:
      return "boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return "integer";
    case json::value_t::number_float:
      return "float";
    case json::value_t::string:
      return "string";
    case json::value_t::array:
      return "array";
    case json::value_t::object:
      return "object";
    case json::value_t::binary:
      return "binary";
    case json::value_t::discarded:
      return "discarded";
  }
  return "unknown";
}

// ---- JsonView ----

JsonView::JsonView(const nlohmann::json& j, std::string source, bool is_file)
    : j_(&j), ctx_(std::make_shared<const Context>(Context{std::move(source), is_file})) {}

std::string JsonView::describe() const {
  return path_.empty() ? std::string("the top-level value") : fmt::format("field \"{}\"", path_);
}

void JsonView::fail(std::string_view message) const {
  throw_kind(ctx_->is_file, fmt::format("{}: {} {}", ctx_->source, describe(), message));
}

void JsonView::type_error(std::string_view expected) const {
  fail(fmt::format("must be {}, got {}", expected, json_type_name(*j_)));
}

JsonView JsonView::operator[](std::string_view key) const {
  if (!j_->is_object()) type_error("an object");
  const std::string child = path_.empty() ? std::string(key) : fmt::format("{}.{}", path_, key);
  const auto it = j_->find(key);
  if (it == j_->end()) {
    throw_kind(ctx_->is_file,
               fmt::format("{}: missing required field \"{}\"", ctx_->source, child));
  }
  return JsonView(&*it, ctx_, child);
}

JsonView JsonView::operator[](size_t index) const {
  if (!j_->is_array()) type_error("an array");
  if (index >= j_->size()) {
    fail(fmt::format("has {} elements; index {} is out of range", j_->size(), index));
  }
  return JsonView(&(*j_)[index], ctx_, fmt::format("{}[{}]", path_, index));
}

std::optional<JsonView> JsonView::find(std::string_view key) const {
  if (!j_->is_object()) type_error("an object");
  if (j_->find(key) == j_->end()) return std::nullopt;
  return (*this)[key];
}

bool JsonView::contains(std::string_view key) const { return find(key).has_value(); }

size_t JsonView::size() const {
  if (!j_->is_array() && !j_->is_object()) type_error("an array or an object");
  return j_->size();
}

std::vector<JsonView> JsonView::elements() const {
  if (!j_->is_array()) type_error("an array");
  std::vector<JsonView> out;
  out.reserve(j_->size());
  for (size_t i = 0; i < j_->size(); ++i) out.push_back((*this)[i]);
  return out;
}

std::vector<std::pair<std::string, JsonView>> JsonView::items() const {
  if (!j_->is_object()) type_error("an object");
  std::vector<std::pair<std::string, JsonView>> out;
  out.reserve(j_->size());
  for (auto it = j_->begin(); it != j_->end(); ++it) out.emplace_back(it.key(), (*this)[it.key()]);
  return out;
}

bool JsonView::as_bool() const {
  if (!j_->is_boolean()) type_error("a boolean");
  return j_->get<bool>();
}

int64_t JsonView::as_int64() const {
  if (!j_->is_number_integer()) type_error("an integer");
  if (j_->is_number_unsigned() && j_->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
    fail(fmt::format("is {}, out of range for a signed 64-bit integer", j_->get<uint64_t>()));
  }
  return j_->get<int64_t>();
}

uint64_t JsonView::as_uint64() const {
  if (!j_->is_number_integer()) type_error("an integer");
  if (j_->is_number_unsigned()) return j_->get<uint64_t>();
  const int64_t v = j_->get<int64_t>();
  if (v < 0) fail(fmt::format("must be non-negative, got {}", v));
  return static_cast<uint64_t>(v);
}

double JsonView::as_double() const {
  if (!j_->is_number()) type_error("a number");
  return j_->get<double>();
}

std::string JsonView::as_string() const {
  if (!j_->is_string()) type_error("a string");
  return j_->get<std::string>();
}

}  // namespace osprey::io
