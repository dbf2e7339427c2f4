// Layer names: counters per base name, a NameScope that starts them fresh for its own builds and
// leaves the process-wide ones alone, nested scopes, and scopes on other threads.
#include "osprey/nn/name_scope.h"

#include <gtest/gtest.h>

#include <thread>

#include "osprey/nn/layers/all.h"

namespace osprey::nn {
namespace {

TEST(NameScopeTest, TwoScopesNameTheSameArchitectureAlike) {
  clear_session();
  EXPECT_EQ(layers::Dense(2)->name(), "dense");
  std::string first, second;
  {
    NameScope scope;
    EXPECT_EQ(layers::Dense(2)->name(), "dense");
    first = layers::Dense(2)->name();
  }
  {
    NameScope scope;
    layers::Dense(2);
    second = layers::Dense(2)->name();
  }
  EXPECT_EQ(first, "dense_1");
  EXPECT_EQ(second, first);
  // The process-wide counters went on from where they were.
  EXPECT_EQ(layers::Dense(2)->name(), "dense_1");
}

TEST(NameScopeTest, AnInnerScopeHidesTheOuterOneUntilItEnds) {
  NameScope outer;
  EXPECT_EQ(unique_name("x"), "x");
  {
    NameScope inner;
    EXPECT_EQ(unique_name("x"), "x");
    clear_session();  // the inner scope's counters only
    EXPECT_EQ(unique_name("x"), "x");
  }
  EXPECT_EQ(unique_name("x"), "x_1");
}

TEST(NameScopeTest, AScopeCountsOnlyItsOwnThread) {
  NameScope scope;
  EXPECT_EQ(unique_name("scoped"), "scoped");
  std::string elsewhere;
  std::thread([&] {
    unique_name("scoped");  // process-wide: does not touch this thread's scope
    elsewhere = unique_name("scoped");
  }).join();
  EXPECT_NE(elsewhere, "scoped");
  EXPECT_EQ(unique_name("scoped"), "scoped_1");
}

}  // namespace
}  // namespace osprey::nn
