#include <osprey/osprey.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
namespace os = osprey;
namespace text = os::data::text;

// Writes reviews/{neg,pos}/N.txt: ten words each, two of them saying how the film was.
void write_reviews(const std::string& root) {
  const std::vector<std::string> filler = {"the", "film", "plot", "actors", "story",  "was",
                                           "and", "a",    "with", "music",  "scenes", "ending"};
  const std::vector<std::vector<std::string>> said = {
      {"awful", "boring", "hated", "terrible", "dull", "waste"},             // neg
      {"great", "wonderful", "loved", "excellent", "moving", "brilliant"}};  // pos
  std::mt19937 rng(3);
  for (int label = 0; label < 2; ++label) {
    const std::string dir = root + (label ? "/pos" : "/neg");
    std::filesystem::create_directories(dir);
    for (int i = 0; i < 200; ++i) {
      std::vector<std::string> words;
      words.reserve(10);
      for (int w = 0; w < 8; ++w) words.push_back(filler[rng() % filler.size()]);
      for (int w = 0; w < 2; ++w)
        words.insert(words.begin() + rng() % words.size(), said[label][rng() % 6]);
      std::ofstream f(dir + "/" + std::to_string(i) + ".txt");
      for (const auto& w : words) f << w << ' ';
    }
  }
}

os::Model compile(os::Model model) {
  model.compile("adam", "binary_crossentropy", {"accuracy"});
  return model;
}

int main() {
  os::set_global_seed(5);
  write_reviews("reviews");
  // 80% to train on, 20% to validate: the same seed puts each file in one of the two.
  text::TextFolderOptions split{
      .label_mode = "binary", .batch_size = 32, .seed = 11, .validation_split = 0.2};
  split.subset = "training";
  const auto train = text::text_dataset_from_directory("reviews", split);
  split.subset = "validation";
  const auto val = text::text_dataset_from_directory("reviews", split);
  text::TextVectorization vectorize({.max_tokens = 1000, .output_sequence_length = 16});
  vectorize.adapt(train.texts);  // the vocabulary of the training texts only
  const int64_t vocab = vectorize.vocabulary_size();

  // An embedding read by a bidirectional LSTM, and a small transformer encoder. Index 0 pads
  // each review to 16 tokens: mask_zero keeps the padding out of the LSTM, the attention and the
  // pooling.
  const os::nn::EmbeddingOptions padded{.mask_zero = true};
  os::Model lstm = compile(os::Sequential({os::layers::Embedding(vocab, 32, padded),
                                           os::layers::Bidirectional(os::layers::LSTM(16)),
                                           os::layers::Dense(1, "sigmoid")}));
  os::Model transformer = compile(os::Sequential(
      {os::layers::Embedding(vocab, 32, padded), os::layers::TransformerEncoder(64, 4),
       os::layers::GlobalAveragePooling1D(), os::layers::Dense(1, "sigmoid")}));
  bool both = true;
  for (auto* model : {&lstm, &transformer}) {
    model->fit(train.dataset(vectorize),
               {.epochs = 8, .verbose = 0, .validation_data = val.dataset(vectorize)});
    const double accuracy = model->evaluate(val.dataset(vectorize)).at("accuracy");
    std::printf("%s: validation accuracy %.3f\n", model->name().c_str(), accuracy);
    both = both && accuracy > 0.9;
  }
  if (both) std::printf("both classifiers tell the reviews apart\n");
}
