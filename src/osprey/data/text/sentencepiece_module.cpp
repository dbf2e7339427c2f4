// libosprey_sentencepiece.so: SentencePiece's trainer and processor behind the table of
// internal/sentencepiece_api.h (why a module of its own: that header). Exceptions do not cross
// the dlopen boundary: SentencePiece reports through Status, and so does each function here.
#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <unordered_map>

#include "osprey/data/text/internal/sentencepiece_api.h"

namespace {

using sentencepiece::SentencePieceProcessor;
using sentencepiece::util::Status;

std::string message(const Status& status) { return status.ok() ? "" : status.ToString(); }

// The trainer reads its sentences through this interface (no file to write and remove).
class LineIterator final : public sentencepiece::SentenceIterator {
 public:
  explicit LineIterator(const std::vector<std::string_view>& lines) : lines_(lines) { load(); }
  bool done() const override { return at_ >= lines_.size(); }
  void Next() override {
    ++at_;
    load();
  }
  const std::string& value() const override { return current_; }
  Status status() const override { return {}; }

 private:
  void load() {
    if (!done()) current_.assign(lines_[at_]);
  }
  const std::vector<std::string_view>& lines_;
  size_t at_ = 0;
  std::string current_;
};

std::string train(const std::vector<std::string_view>& lines,
                  const std::vector<std::pair<std::string, std::string>>& options,
                  std::string* model_proto) {
  LineIterator it(lines);
  const std::unordered_map<std::string, std::string> kwargs(options.begin(), options.end());
  return message(sentencepiece::SentencePieceTrainer::Train(kwargs, &it, model_proto));
}

std::string load(std::string_view model_proto, void** processor) {
  auto p = std::make_unique<SentencePieceProcessor>();
  const Status status = p->LoadFromSerializedProto(model_proto);
  if (status.ok()) *processor = p.release();
  return message(status);
}

void release(void* processor) { delete static_cast<SentencePieceProcessor*>(processor); }

const SentencePieceProcessor& of(const void* processor) {
  return *static_cast<const SentencePieceProcessor*>(processor);
}

int piece_size(const void* processor) { return of(processor).GetPieceSize(); }

std::string id_to_piece(const void* processor, int id) { return of(processor).IdToPiece(id); }

std::string encode(const void* processor, std::string_view text, std::vector<int>* ids) {
  return message(of(processor).Encode(text, ids));
}

std::string decode(const void* processor, const std::vector<int>& ids, std::string* text) {
  return message(of(processor).Decode(ids, text));
}

constexpr osprey::data::text::detail::SentencePieceApi kApi{
    &train, &load, &release, &piece_size, &id_to_piece, &encode, &decode};

}  // namespace

extern "C" const osprey::data::text::detail::SentencePieceApi* osprey_sentencepiece_api() {
  return &kApi;
}
