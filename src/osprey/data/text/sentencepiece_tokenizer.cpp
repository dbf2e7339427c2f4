#include "osprey/data/text/sentencepiece_tokenizer.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cstdlib>

#include "osprey/core/error.h"
#include "osprey/data/text/internal/sentencepiece_api.h"
#include "osprey/data/text/utf8.h"

namespace osprey::data::text {

namespace {

// <unk>, "\n" and the 256 byte pieces: the ids every model starts with.
constexpr int64_t kFixedPieces = 258;
// The training sample's bound: all of Tiny Shakespeare (1.1 MB), a few seconds for either model.
constexpr size_t kMaxTrainingBytes = size_t{2} << 20;
// SentencePiece skips a training sentence longer than its max_sentence_length (4,192 bytes), so
// longer lines are cut into parts below it.
constexpr size_t kMaxLineBytes = 4096;

void check_model_type(const std::string& model_type) {
  OSPREY_CHECK(model_type == "bpe" || model_type == "unigram",
               "SentencePieceTokenizer: model_type must be bpe or unigram. Received: '{}'",
               model_type);
}

// SentencePiece's message without the source location and failed condition its CHECKs put
// before it: "Internal: ./src/x.cc(660) [a == b] Vocabulary size too high..." -> the rest.
std::string reason(const std::string& message) {
  const size_t bracket = message.rfind("] ");
  return bracket == std::string::npos ? message : message.substr(bracket + 2);
}

// RTLD_DEEPBIND: SentencePiece binds to its own protobuf, not the process's. The sanitizers'
// runtimes refuse it (they must see every allocation); their builds load the module plainly,
// which works where no libprotobuf is loaded (data_test) and aborts where one is.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr int kDlopenFlags = RTLD_NOW | RTLD_LOCAL;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr int kDlopenFlags = RTLD_NOW | RTLD_LOCAL;
#else
constexpr int kDlopenFlags = RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND;
#endif
#else
constexpr int kDlopenFlags = RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND;
#endif

// The module, loaded once: from OSPREY_SENTENCEPIECE_MODULE, the build tree, or the install.
const detail::SentencePieceApi& sentencepiece() {
  static const detail::SentencePieceApi* const api = [] {
    std::vector<std::string> tried;
    const std::array<const char*, 3> paths = {std::getenv("OSPREY_SENTENCEPIECE_MODULE"),
                                              OSPREY_SENTENCEPIECE_MODULE_BUILD,
                                              OSPREY_SENTENCEPIECE_MODULE_INSTALL};
    for (const char* path : paths) {
      if (path == nullptr || *path == '\0') continue;
      void* module = dlopen(path, kDlopenFlags);
      void* table = module == nullptr ? nullptr : dlsym(module, "osprey_sentencepiece_api");
      if (table != nullptr) {
        return reinterpret_cast<const detail::SentencePieceApi* (*)()>(table)();
      }
      const char* why = dlerror();
      tried.push_back(fmt::format("{} ({})", path, why == nullptr ? "no table" : why));
    }
    OSPREY_THROW(NotImplementedError,
                 "SentencePieceTokenizer: cannot load libosprey_sentencepiece.so, osprey's "
                 "SentencePiece module; tried {} (OSPREY_SENTENCEPIECE_MODULE names it)",
                 fmt::join(tried, ", "));
  }();
  return *api;
}

// The text's lines, without their newlines (the trainer takes sentences; "\n" is a piece of its
// own), the empty ones dropped, long ones cut at a character boundary; evenly spaced lines of a
// text past kMaxTrainingBytes.
std::vector<std::string_view> training_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t total = 0;
  for (size_t at = 0; at < text.size();) {
    const size_t end = std::min(text.find('\n', at), text.size());
    for (size_t from = at; from < end;) {
      size_t to = std::min(end, from + kMaxLineBytes);
      while (to < end && (static_cast<unsigned char>(text[to]) & 0xC0) == 0x80) --to;
      lines.push_back(text.substr(from, to - from));
      total += to - from;
      from = to;
    }
    at = end + 1;
  }
  const size_t stride = (total + kMaxTrainingBytes - 1) / kMaxTrainingBytes;
  if (stride <= 1) return lines;
  std::vector<std::string_view> sample;
  for (size_t i = 0; i < lines.size(); i += stride) sample.push_back(lines[i]);
  return sample;
}

// The model proto goes into tokenizer.json as base64 (RFC 4648, padded): JSON strings hold text.
constexpr std::string_view kBase64 =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string base64_encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const size_t n = std::min<size_t>(3, bytes.size() - i);
    uint32_t v = 0;
    for (size_t k = 0; k < 3; ++k) {
      v = (v << 8) | (k < n ? static_cast<unsigned char>(bytes[i + k]) : 0U);
    }
    for (size_t k = 0; k < 4; ++k) out += k <= n ? kBase64[(v >> (18 - 6 * k)) & 0x3F] : '=';
  }
  return out;
}

// ValueError naming `who` and the first character that is not base64.
std::string base64_decode(std::string_view text, const std::string& who) {
  OSPREY_CHECK(text.size() % 4 == 0, "{} is not base64: its length {} is not a multiple of 4", who,
               text.size());
  std::array<int, 256> value{};
  value.fill(-1);
  for (size_t i = 0; i < kBase64.size(); ++i) value[static_cast<unsigned char>(kBase64[i])] = i;
  const size_t padding =
      text.empty() ? 0 : (text.back() == '=' ? 1 : 0) + (text.ends_with("==") ? 1 : 0);
  std::string out;
  out.reserve(text.size() / 4 * 3);
  uint32_t v = 0;
  for (size_t i = 0; i < text.size() - padding; ++i) {
    const int d = value[static_cast<unsigned char>(text[i])];
    OSPREY_CHECK(d >= 0, "{} is not base64: '{}' at character {}", who, text[i], i);
    v = (v << 6) | static_cast<uint32_t>(d);
    if (i % 4 == 3) {
      out += static_cast<char>(v >> 16), out += static_cast<char>(v >> 8),
          out += static_cast<char>(v);
      v = 0;
    }
  }
  if (padding == 1) out += static_cast<char>(v >> 10), out += static_cast<char>(v >> 2);
  if (padding == 2) out += static_cast<char>(v >> 4);
  return out;
}

}  // namespace

SentencePieceTokenizer SentencePieceTokenizer::fit(std::string_view text, int64_t vocab_size,
                                                   const std::string& model_type) {
  check_model_type(model_type);
  const std::string who = fmt::format("SentencePieceTokenizer ({})", model_type);
  OSPREY_CHECK(vocab_size > kFixedPieces,
               "{}: vocab_size must be more than {}: <unk>, the newline and the 256 bytes come "
               "first, then the text's characters and subwords. Received: {}",
               who, kFixedPieces, vocab_size);
  detail::check_utf8(text, who.c_str());
  const std::vector<std::string_view> lines = training_lines(text);
  OSPREY_CHECK(!lines.empty(), "{}: the text has nothing but newlines to learn from", who);
  // Byte fallback with full character coverage: any text encodes. The identity normalization
  // without the dummy prefix or whitespace folding: decode gives back the very text. One thread:
  // the unigram trainer's sums would otherwise depend on how the work splits (same ids each fit).
  const std::vector<std::pair<std::string, std::string>> options = {
      {"model_type", model_type},
      {"vocab_size", std::to_string(vocab_size)},
      {"character_coverage", "1.0"},
      {"byte_fallback", "true"},
      {"normalization_rule_name", "identity"},
      {"remove_extra_whitespaces", "false"},
      {"add_dummy_prefix", "false"},
      {"user_defined_symbols", "\n"},
      {"unk_id", "0"},
      {"bos_id", "-1"},
      {"eos_id", "-1"},
      {"num_threads", "1"},
      {"minloglevel", "2"},  // the trainer's progress log to stderr: errors only
  };
  std::string proto;
  const std::string error = sentencepiece().train(lines, options, &proto);
  OSPREY_CHECK(error.empty(), "{}: SentencePiece cannot train {} pieces on this text: {}", who,
               vocab_size, reason(error));
  return {model_type, std::move(proto), who + ": the model"};
}

SentencePieceTokenizer::SentencePieceTokenizer(std::string model_type, std::string model_proto,
                                               const std::string& who)
    : model_type_(std::move(model_type)), model_proto_(std::move(model_proto)) {
  check_model_type(model_type_);
  const detail::SentencePieceApi& api = sentencepiece();
  void* processor = nullptr;
  const std::string error = api.load(model_proto_, &processor);
  const std::string why = reason(error);
  OSPREY_CHECK(error.empty(), "{} is not a SentencePiece model{}", who,
               why.empty() ? "" : " (" + why + ")");
  processor_ = std::shared_ptr<void>(processor, api.release);
}

SentencePieceTokenizer SentencePieceTokenizer::from_json(const nlohmann::json& j) {
  const std::string kind = j.value("kind", "");
  OSPREY_CHECK(j.contains("model") && j["model"].is_string(),
               "tokenizer: a {} tokenizer needs its 'model' as a string (the SentencePiece model "
               "in base64)",
               kind);
  OSPREY_CHECK(j.contains("vocab_size") && j["vocab_size"].is_number_integer(),
               "tokenizer: a {} tokenizer needs its 'vocab_size' as an integer", kind);
  const std::string who = fmt::format("tokenizer: the {} tokenizer's 'model'", kind);
  SentencePieceTokenizer tok(kind, base64_decode(j["model"].get<std::string>(), who), who);
  const auto expected = j["vocab_size"].get<int64_t>();
  OSPREY_CHECK(tok.vocab_size() == expected, "{} holds {} pieces; its 'vocab_size' says {}", who,
               tok.vocab_size(), expected);
  return tok;
}

int64_t SentencePieceTokenizer::vocab_size() const {
  return sentencepiece().piece_size(processor_.get());
}

std::vector<int64_t> SentencePieceTokenizer::encode(std::string_view text) const {
  // SentencePiece would replace invalid bytes with U+FFFD without a word; the char tokenizer's
  // error instead.
  detail::check_utf8(text, fmt::format("SentencePieceTokenizer ({})", model_type_).c_str());
  std::vector<int> ids;
  const std::string error = sentencepiece().encode(processor_.get(), text, &ids);
  OSPREY_ASSERT(error.empty(), "SentencePiece cannot encode: {}", error);
  return {ids.begin(), ids.end()};
}

std::string SentencePieceTokenizer::decode(std::span<const int64_t> ids) const {
  const int64_t n = vocab_size();
  std::vector<int> pieces(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    OSPREY_CHECK(ids[i] >= 0 && ids[i] < n,
                 "SentencePieceTokenizer ({}): token id {} at position {} is outside the "
                 "vocabulary [0, {})",
                 model_type_, ids[i], i, n);
    pieces[i] = static_cast<int>(ids[i]);
  }
  std::string out;
  const std::string error = sentencepiece().decode(processor_.get(), pieces, &out);
  OSPREY_ASSERT(error.empty(), "SentencePiece cannot decode: {}", error);
  return out;
}

nlohmann::json SentencePieceTokenizer::to_json() const {
  return {
      {"kind", model_type_}, {"vocab_size", vocab_size()}, {"model", base64_encode(model_proto_)}};
}

std::string SentencePieceTokenizer::piece(int64_t id) const {
  OSPREY_CHECK(id >= 0 && id < vocab_size(),
               "SentencePieceTokenizer ({}): token id {} is outside the vocabulary [0, {})",
               model_type_, id, vocab_size());
  return sentencepiece().id_to_piece(processor_.get(), static_cast<int>(id));
}

}  // namespace osprey::data::text
