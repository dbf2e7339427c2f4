#include "osprey/tensor/allocator.h"

#include <gtest/gtest.h>

#include "osprey/tensor/factory.h"
#include "osprey/tensor/ops.h"

namespace osprey {
namespace {

TEST(AllocatorTest, FreedBlocksAreReusedWithoutTheSystemAllocator) {
  Allocator& a = Allocator::instance();
  void* p = a.allocate(1000);
  a.deallocate(p, 1000);
  const int64_t before = a.stats().system_allocations;
  void* q = a.allocate(990);  // same size class
  EXPECT_EQ(q, p);
  EXPECT_EQ(a.stats().system_allocations, before);
  a.deallocate(q, 990);
}

TEST(AllocatorTest, LargeBlocksAreHugePageAligned) {
  Allocator& a = Allocator::instance();
  void* p = a.allocate(size_t{5} << 20);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % (size_t{2} << 20), 0u);
  a.deallocate(p, size_t{5} << 20);
  void* small = a.allocate(3);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(small) % 64, 0u);
  a.deallocate(small, 3);
}

TEST(AllocatorTest, RoundSizeWastesAtMostAnEighth) {
  // Large blocks as well: 4.5 MiB (a [12, 256, 384] float32 activation) is a class of its own.
  for (size_t n : {1ul, 63ul, 4097ul, 100000ul, 1999999ul, 3000000ul, 4718592ul, 19000000ul}) {
    const size_t r = Allocator::round_size(n);
    EXPECT_GE(r, n);
    if (n > 4096) {
      EXPECT_LE(r, n + n / 8 + 1) << n;
    }
  }
  EXPECT_EQ(Allocator::round_size(4718592), 4718592u);
}

TEST(AllocatorTest, ARepeatedComputationInSteadyStateNeverCallsTheSystemAllocator) {
  // The shape of a training step: the same tensors created and dropped every iteration.
  Tensor w = random_normal({256, 128}, {.seed = 3});
  auto step = [&] {
    Tensor x = random_normal({64, 256}, {.seed = 4});
    Tensor h = relu(matmul(x, w));
    Tensor loss = mean(mul(h, h));
    return loss.item();
  };
  step();
  step();
  const int64_t before = Allocator::instance().stats().system_allocations;
  for (int i = 0; i < 10; ++i) step();
  EXPECT_EQ(Allocator::instance().stats().system_allocations, before);
}

TEST(AllocatorTest, StatsTrackBytesInUseAndPeak) {
  Allocator& a = Allocator::instance();
  a.reset_peak();
  const int64_t base = a.stats().bytes_in_use;
  {
    Tensor t = Tensor::empty({1024}, {DType::float32});
    EXPECT_EQ(a.stats().bytes_in_use, base + 4096);
  }
  EXPECT_EQ(a.stats().bytes_in_use, base);
  EXPECT_GE(a.stats().peak_bytes_in_use, base + 4096);
}

}  // namespace
}  // namespace osprey
