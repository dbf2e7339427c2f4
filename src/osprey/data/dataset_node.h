// The node interface behind Dataset. A Dataset is a handle on an immutable graph of nodes, one
// per source or transform; iterating builds a matching chain of iterators, one per node, so a
// graph can be iterated many times, by many threads, at once. A new transform is a Node and an
// IteratorImpl in its own .cpp plus one Dataset method (see map_filter.cpp for the smallest).
//   auto ds = Dataset::from_tensors({x, y}).shuffle(1000, 7).batch(32);
//   ds.describe() == "FromTensors(60000) -> Shuffle(1000) -> Batch(32)"
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "osprey/data/element.h"

namespace osprey::data {

// Cardinality of a dataset whose length is infinite (repeat()) or not known without iterating
// (filter, unbatch, generators); TensorFlow's values.
inline constexpr int64_t kInfinite = -1;
inline constexpr int64_t kUnknown = -2;

namespace detail {

// One pass over a node's elements. Not thread-safe: one consumer per iterator.
class IteratorImpl {
 public:
  virtual ~IteratorImpl() = default;
  // The next element, or nullopt at the end of the epoch.
  virtual std::optional<Element> next() = 0;
  // Skips up to n elements and returns how many were skipped (fewer only at the end). The
  // default pulls them; sources with random access and element-wise transforms do better.
  virtual int64_t skip(int64_t n);
};

class Node : public std::enable_shared_from_this<Node> {
 public:
  virtual ~Node() = default;
  // An iterator over this node's elements for one epoch. Transforms that depend on the epoch
  // (shuffle) derive their randomness from it; repeat hands each repetition its own epoch.
  virtual std::unique_ptr<IteratorImpl> make_iterator(uint64_t epoch) const = 0;
  // Number of elements, kInfinite or kUnknown.
  virtual int64_t cardinality() const = 0;
  // This node's part of Dataset::describe(), e.g. "Batch(32)".
  virtual std::string label() const = 0;
  // The node this one reads from; null for sources.
  virtual const Node* input() const { return nullptr; }
  // True when the order of elements changes from epoch to epoch (a reshuffling shuffle
  // upstream, not frozen by a cache).
  virtual bool order_varies_by_epoch() const {
    return input() ? input()->order_varies_by_epoch() : false;
  }

  template <class T>
  std::shared_ptr<const T> self() const {
    return std::static_pointer_cast<const T>(shared_from_this());
  }
};

using NodePtr = std::shared_ptr<const Node>;

// The epoch that repetition `i` of `epoch` hands to its input: distinct for every (epoch, i),
// and a pure function of them (splitmix64 finalizer).
uint64_t derive_epoch(uint64_t epoch, uint64_t i) noexcept;

}  // namespace detail
}  // namespace osprey::data
