// Dataset: the input pipeline, Keras's tf.data in C++. A Dataset is a cheap-to-copy value (a
// shared, immutable graph of sources and transforms); every pass over it is one epoch, and
// epoch-dependent transforms (shuffle) change order deterministically from their seed and the
// epoch. prefetch() runs everything upstream on a background thread, so reading and transforms
// overlap with training. Readers live in idx.h and csv.h, in-memory arrays in labeled_arrays.h.
//   auto ds = Dataset::from_tensors({x, y})          // x: [N, 784] float32, y: [N] int64
//                 .shuffle(10000, /*seed=*/42)
//                 .batch(128)
//                 .prefetch(kAutotune);
//   for (int epoch = 0; epoch < 3; ++epoch)
//     for (auto& batch : ds) train_step(batch[0], batch[1]);   // batch[0]: [128, 784]
//   auto it = ds.iterator();  while (auto b = it.next()) { ... }  // the same, spelled out
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "osprey/data/dataset_node.h"
#include "osprey/data/element.h"

namespace osprey::data {

// prefetch(kAutotune): the buffer grows while the consumer finds it empty (up to 16 elements).
inline constexpr int64_t kAutotune = -1;

using MapFn = std::function<Element(Element)>;
using Predicate = std::function<bool(const Element&)>;
// A generator yields elements until it returns nullopt; a factory makes one per epoch.
using Generator = std::function<std::optional<Element>()>;
using GeneratorFactory = std::function<Generator(uint64_t epoch)>;

struct ShuffleOptions {
  // Fixed seed for a reproducible order; unset: drawn from osprey::next_seed() when the
  // transform is created (reproducible under set_global_seed).
  std::optional<uint64_t> seed = std::nullopt;
  // A new order every epoch (derived from the seed and the epoch), as tf.data's default.
  bool reshuffle_each_iteration = true;
};

// One pass over a dataset. Move-only; destroying it mid-epoch stops background threads.
class Iterator {
 public:
  explicit Iterator(std::unique_ptr<detail::IteratorImpl> impl);
  Iterator(Iterator&&) noexcept;
  Iterator& operator=(Iterator&&) noexcept;
  ~Iterator();

  // The next element, or nullopt at the end of the epoch. Errors raised upstream (also on a
  // prefetch thread) are rethrown here.
  std::optional<Element> next();
  // Skips up to n elements; returns how many were skipped.
  int64_t skip(int64_t n);

  // Range-for support: for (Element& e : it) {...}
  class Cursor {
   public:
    using value_type = Element;
    using difference_type = std::ptrdiff_t;
    Element& operator*() { return *current_; }
    Element* operator->() { return &*current_; }
    Cursor& operator++() {
      current_ = it_->next();
      return *this;
    }
    void operator++(int) { ++*this; }
    bool operator==(std::default_sentinel_t) const { return !current_.has_value(); }

   private:
    friend class Iterator;
    friend class Dataset;
    explicit Cursor(Iterator* it) : it_(it), current_(it->next()) {}
    Cursor(std::unique_ptr<Iterator> owned)
        : owned_(std::move(owned)), it_(owned_.get()), current_(it_->next()) {}
    std::unique_ptr<Iterator> owned_;  // set when the cursor came from Dataset::begin()
    Iterator* it_;
    std::optional<Element> current_;
  };
  Cursor begin() { return Cursor(this); }
  std::default_sentinel_t end() const { return {}; }

 private:
  std::unique_ptr<detail::IteratorImpl> impl_;
};

class Dataset {
 public:
  // An empty dataset (no elements).
  Dataset();
  explicit Dataset(detail::NodePtr node);

  // Sources.
  // Slices every tensor along axis 0: element i is {parts[0][i], parts[1][i], ...} (views).
  static Dataset from_tensors(Element parts);
  // int64 scalars start, start + step, ... < stop.
  static Dataset range(int64_t stop);
  static Dataset range(int64_t start, int64_t stop, int64_t step = 1);
  // Elements from a generator made fresh each epoch.
  static Dataset from_generator(GeneratorFactory factory, int64_t cardinality = kUnknown);

  // Transforms. Each returns a new Dataset; this one is unchanged.
  Dataset map(MapFn fn) const;
  Dataset filter(Predicate keep) const;
  // A buffer of buffer_size elements, drawn from uniformly (tf.data semantics: buffer_size >=
  // the dataset size gives a uniform permutation).
  Dataset shuffle(int64_t buffer_size, uint64_t seed) const;
  Dataset shuffle(int64_t buffer_size, ShuffleOptions options = {}) const;
  // Stacks `size` consecutive elements into [size, ...] tensors; the last batch is smaller
  // unless drop_remainder.
  Dataset batch(int64_t size, bool drop_remainder = false) const;
  // batch() for elements whose shapes differ (token sequences of different lengths): each
  // component is padded with padding_value to the largest size along every axis in the batch,
  // as tf.data's padded_batch: int64 [3], [5], [2] -> [3, 5], zeros after the short rows.
  Dataset padded_batch(int64_t size, double padding_value = 0, bool drop_remainder = false) const;
  // Splits every element along axis 0 into rows (the inverse of batch).
  Dataset unbatch() const;
  // Keeps the elements of the first complete pass in memory; later passes read them from
  // there (a partial pass caches nothing).
  Dataset cache() const;
  // Produces up to buffer_size elements ahead on a background thread.
  Dataset prefetch(int64_t buffer_size = kAutotune) const;
  // Repeats the dataset count times (-1: forever); each repetition is its own epoch upstream.
  Dataset repeat(int64_t count = -1) const;
  // The first n elements (n < 0: all).
  Dataset take(int64_t n) const;
  // All but the first n elements (n < 0: none).
  Dataset skip(int64_t n) const;
  // Every num_shards-th element starting at index (one worker's share).
  Dataset shard(int64_t num_shards, int64_t index) const;

  // {all but the last n elements, the last n}; needs a known, finite cardinality and an order
  // that does not change between epochs (split before shuffling).
  std::pair<Dataset, Dataset> split_tail(int64_t n) const;
  // {the first floor(fraction * cardinality) elements, the rest}; same requirements.
  std::pair<Dataset, Dataset> split(double fraction) const;

  // Number of elements, kInfinite or kUnknown.
  int64_t cardinality() const;
  // The pipeline, source first: "FromTensors(60000) -> Shuffle(1000) -> Batch(32)".
  std::string describe() const;

  // A pass over the next epoch (0, 1, 2... per Dataset value and its copies).
  Iterator iterator() const;
  // A pass over a given epoch, leaving the epoch counter alone (resuming a training run).
  Iterator iterator(uint64_t epoch) const;
  // Range-for: each loop over the dataset is the next epoch.
  Iterator::Cursor begin() const;
  std::default_sentinel_t end() const { return {}; }

  const detail::NodePtr& node() const noexcept { return node_; }

 private:
  detail::NodePtr node_;
  std::shared_ptr<std::atomic<uint64_t>> epochs_;  // shared by copies of this Dataset
};

}  // namespace osprey::data
