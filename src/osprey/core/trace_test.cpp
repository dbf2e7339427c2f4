#include "osprey/core/trace.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <thread>

#include "osprey/core/error.h"
#include "osprey/core/error_of_test.h"

namespace osprey::trace {
namespace {

int64_t fake_now = 0;
int64_t fake_clock() { return fake_now; }

// Installs the fake clock for one test and always leaves the recorder stopped.
class TraceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fake_now = 1000;
    set_clock_for_testing(&fake_clock);
  }
  void TearDown() override {
    if (enabled()) stop();
    set_clock_for_testing(nullptr);
  }
};

const ThreadEvents& only_thread(const Session& s) {
  EXPECT_EQ(s.threads.size(), 1U);
  return s.threads.at(0);
}

const Event& find(const ThreadEvents& t, const std::string& name) {
  auto it = std::find_if(t.events.begin(), t.events.end(),
                         [&](const Event& e) { return e.name == name; });
  EXPECT_NE(it, t.events.end()) << name;
  return *it;
}

TEST_F(TraceTest, NothingIsRecordedWhileOffAndArgumentsAreNotBuilt) {
  bool built = false;
  {
    Span s(Category::op, "matmul", [&](Args& a) {
      built = true;
      a.emplace_back("k", "v");
    });
    EXPECT_FALSE(s.recording());
    counter("bytes_in_use", 5);
    mark_op_start();
  }
  EXPECT_FALSE(built);
  EXPECT_FALSE(enabled());
  start();
  const Session s = stop();
  EXPECT_TRUE(s.threads.empty());
}

TEST_F(TraceTest, NestedSpansKeepTheirTimesOnTheFakeClock) {
  start();
  {
    Span outer(Category::layer, "dense", [](Args& a) { a.emplace_back("path", "seq/dense"); });
    fake_now = 1002;
    {
      Span inner(Category::op, "matmul");
      fake_now = 1007;
      inner.add_arg("kernel", "brg:avx512_core");
    }
    fake_now = 1010;
  }
  fake_now = 1020;
  const Session s = stop();
  EXPECT_EQ(s.start_us, 1000);
  EXPECT_EQ(s.stop_us, 1020);
  const ThreadEvents& t = only_thread(s);
  ASSERT_EQ(t.events.size(), 2U);
  const Event& outer = find(t, "dense");
  EXPECT_EQ(outer.category, Category::layer);
  EXPECT_EQ(outer.start_us, 1000);
  EXPECT_EQ(outer.dur_us, 10);
  EXPECT_EQ(outer.args, (Args{{"path", "seq/dense"}}));
  const Event& inner = find(t, "matmul");
  EXPECT_EQ(inner.start_us, 1002);
  EXPECT_EQ(inner.dur_us, 5);
  EXPECT_EQ(inner.args, (Args{{"kernel", "brg:avx512_core"}}));
}

TEST_F(TraceTest, SpansStillOpenAtStopAreDroppedAndLaterEndsAreHarmless) {
  start();
  auto open = std::make_unique<Span>(Category::optimizer, "Adam");
  { Span done(Category::data, "next_batch"); }
  const Session s = stop();
  open.reset();  // ends after the session: must not touch anything
  ASSERT_EQ(only_thread(s).events.size(), 1U);
  EXPECT_EQ(only_thread(s).events[0].name, "next_batch");
}

TEST_F(TraceTest, AnOpMarkedAtItsStartIsRecordedWhenItEnds) {
  start();
  mark_op_start();
  annotate("kernel", [] { return std::string("brg:avx512_core"); });  // goes to the marked op
  fake_now = 1004;
  end_marked_op("linear", [](Args& a) { a.emplace_back("dtype", "float32"); });
  // An end without a mark (an op that did not check its inputs) records nothing.
  end_marked_op("add", [](Args&) { ADD_FAILURE() << "arguments built without a mark"; });
  const Session s = stop();
  const Event& e = find(only_thread(s), "linear");
  EXPECT_EQ(e.category, Category::op);
  EXPECT_EQ(e.start_us, 1000);
  EXPECT_EQ(e.dur_us, 4);
  EXPECT_EQ(e.args, (Args{{"dtype", "float32"}, {"kernel", "brg:avx512_core"}}));
  EXPECT_EQ(only_thread(s).events.size(), 1U);
}

TEST_F(TraceTest, AMarkLeftAtAnotherSpanDepthIsDropped) {
  start();
  mark_op_start();  // an op that never recorded itself
  {
    Span layer(Category::layer, "dense");
    end_marked_op("matmul", [](Args&) {});
  }
  const Session s = stop();
  ASSERT_EQ(only_thread(s).events.size(), 1U);
  EXPECT_EQ(only_thread(s).events[0].name, "dense");
}

TEST_F(TraceTest, CountersAndAnnotationsAreRecorded) {
  start();
  {
    Span op(Category::op, "conv2d");
    annotate("kernel", [] { return std::string("jit:avx2"); });
    counter("bytes_in_use", 4096);
  }
  const Session s = stop();
  const Event& c = find(only_thread(s), "bytes_in_use");
  EXPECT_TRUE(c.is_counter);
  EXPECT_EQ(c.value, 4096);
  EXPECT_EQ(find(only_thread(s), "conv2d").args, (Args{{"kernel", "jit:avx2"}}));
}

TEST_F(TraceTest, EachThreadRecordsIntoItsOwnNamedBuffer) {
  start();
  { Span main_span(Category::step, "step"); }
  std::thread worker([] {
    set_thread_name("prefetch");
    Span s(Category::data, "decode");
  });
  worker.join();  // the buffer outlives its thread
  const Session s = stop();
  ASSERT_EQ(s.threads.size(), 2U);
  EXPECT_NE(s.threads[0].tid, s.threads[1].tid);
  const auto it = std::find_if(s.threads.begin(), s.threads.end(),
                               [](const ThreadEvents& t) { return t.thread_name == "prefetch"; });
  ASSERT_NE(it, s.threads.end());
  ASSERT_EQ(it->events.size(), 1U);
  EXPECT_EQ(it->events[0].name, "decode");
}

TEST_F(TraceTest, ASpanWhoseArgumentsFailToBuildIsDroppedNotThrown) {
  start();
  {
    Span s(Category::op, "bad", [](Args&) { throw std::runtime_error("no shapes"); });
    EXPECT_FALSE(s.recording());
    Span fine(Category::op, "fine");
  }
  const Session s = stop();
  ASSERT_EQ(only_thread(s).events.size(), 1U);
  EXPECT_EQ(only_thread(s).events[0].name, "fine");
}

TEST_F(TraceTest, ANewSessionStartsEmpty) {
  start();
  { Span s(Category::op, "first"); }
  stop();
  start();
  { Span s(Category::op, "second"); }
  const Session s = stop();
  ASSERT_EQ(only_thread(s).events.size(), 1U);
  EXPECT_EQ(only_thread(s).events[0].name, "second");
}

TEST_F(TraceTest, StartingTwiceOrStoppingWhenIdleNamesTheCall) {
  start();
  EXPECT_EQ(testing::error_of<ValueError>([] { start(); }),
            "trace::start: a profiling session is already running");
  stop();
  EXPECT_EQ(testing::error_of<ValueError>([] { stop(); }),
            "trace::stop: no profiling session is running");
}

}  // namespace
}  // namespace osprey::trace
