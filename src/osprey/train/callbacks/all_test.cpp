// The Keras spellings of callbacks/all.h: each osprey::callbacks function makes the callback it
// names, ready for FitOptions::callbacks.
#include "osprey/train/callbacks/all.h"

#include <gtest/gtest.h>

#include "osprey/train/fit_options.h"

namespace osprey::train {
namespace {

template <class T>
bool is(const CallbackPtr& c) {
  return dynamic_cast<T*>(c.get()) != nullptr;
}

TEST(CallbacksTest, KerasSpellingsMakeTheCallbacksTheyName) {
  const FitOptions o{.callbacks = {
                         callbacks::EarlyStopping({.monitor = "val_loss", .patience = 5}),
                         callbacks::TerminateOnNaN(),
                         callbacks::ModelCheckpoint("ckpt/epoch_{epoch}", {.save_best_only = true}),
                         callbacks::CSVLogger("log.csv"),
                         callbacks::LearningRateScheduler([](int, double lr) { return lr; }),
                         callbacks::ReduceLROnPlateau({.factor = 0.5}),
                     }};
  ASSERT_EQ(o.callbacks.size(), 6u);
  EXPECT_TRUE(is<EarlyStopping>(o.callbacks[0]));
  EXPECT_TRUE(is<TerminateOnNaN>(o.callbacks[1]));
  EXPECT_TRUE(is<ModelCheckpoint>(o.callbacks[2]));
  EXPECT_TRUE(is<CSVLogger>(o.callbacks[3]));
  EXPECT_TRUE(is<LearningRateScheduler>(o.callbacks[4]));
  EXPECT_TRUE(is<ReduceLROnPlateau>(o.callbacks[5]));
}

}  // namespace
}  // namespace osprey::train
