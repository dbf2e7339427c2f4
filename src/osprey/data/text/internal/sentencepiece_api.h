// The calls osprey makes into SentencePiece, behind a table of functions that the module
// libosprey_sentencepiece.so (sentencepiece_module.cpp) fills in and SentencePieceTokenizer loads
// with dlopen. Why not link SentencePiece directly: Debian's libsentencepiece.so.0 carries its own
// copy of protobuf-lite 3.14 and exports it (google::protobuf::...), and every program that links
// osprey also links libprotobuf 3.21 (TensorBoard's events, gRPC). In one symbol namespace one
// copy captures the other's calls: libprotobuf crashes at start-up when SentencePiece comes first,
// SentencePiece aborts on its version check when libprotobuf does. Loaded with RTLD_LOCAL |
// RTLD_DEEPBIND, SentencePiece binds to its own copy and is invisible to libprotobuf.
// Not installed: the module and the tokenizer are built together.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace osprey::data::text::detail {

// Each returns "" on success, else SentencePiece's message; none throws.
struct SentencePieceApi {
  // Trains on `lines` (sentences, no newlines) with the trainer's options (name, value).
  std::string (*train)(const std::vector<std::string_view>& lines,
                       const std::vector<std::pair<std::string, std::string>>& options,
                       std::string* model_proto);
  // A SentencePieceProcessor for a serialized model, released with `release`.
  std::string (*load)(std::string_view model_proto, void** processor);
  void (*release)(void* processor);
  int (*piece_size)(const void* processor);
  std::string (*id_to_piece)(const void* processor, int id);
  std::string (*encode)(const void* processor, std::string_view text, std::vector<int>* ids);
  std::string (*decode)(const void* processor, const std::vector<int>& ids, std::string* text);
};

}  // namespace osprey::data::text::detail

// The module's one exported symbol: the table.
extern "C" const osprey::data::text::detail::SentencePieceApi* osprey_sentencepiece_api();
