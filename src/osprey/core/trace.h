// The profiler's recorder: spans (an op's forward, its backward node, a layer call, an optimizer
// update, a wait for data, a collective) and counters (bytes in use), kept per thread with no
// lock and no allocation shared between threads. Off by default; while off a span costs one
// relaxed atomic load and a branch, and its arguments are never built (they are a callable run
// only when recording). io/chrome_trace.h writes a stopped session as a Chrome/Perfetto trace,
// train/callbacks/profiler.h starts and stops it around a window of training steps.
//   trace::start();
//   {
//     trace::Span s(trace::Category::op, "matmul", [&](trace::Args& a) {
//       a.emplace_back("shapes", "[2, 3] [3, 4]");
//     });
//     ...  // the work; nested spans on this thread become its children
//   }
//   trace::Session session = trace::stop();  // every thread's events
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace osprey::trace {

// What a span measures; the names are the categories written to the trace ("cat").
enum class Category : uint8_t {
  op,           // an autograd op's forward
  op_backward,  // the backward of one autograd node
  layer,        // nn::Layer::operator(), named by the layer's path
  optimizer,    // an optimizer's update of all its weights
  data,         // the trainer waiting for the next batch
  collective,   // a communicator call or a parameter-server RPC
  step,         // one training step, as the profiler callback sees it
  other,
};
const char* category_name(Category c) noexcept;

// Small key/value arguments shown with a span ("shapes", "dtype", "kernel", "bytes", "peer").
using Args = std::vector<std::pair<std::string, std::string>>;

// One recorded event. Spans have dur_us >= 0; counters (is_counter) carry `value` at start_us.
struct Event {
  Category category = Category::other;
  bool is_counter = false;
  std::string name;
  int64_t start_us = 0;
  int64_t dur_us = -1;  // -1 while the span is open
  double value = 0;
  Args args;
};

// Everything one thread recorded in a session, in no particular order (sort by start_us).
struct ThreadEvents {
  int tid = 0;  // small, stable per thread: 1 for the first thread that recorded, ...
  std::string thread_name;
  std::vector<Event> events;
};

// A stopped recording.
struct Session {
  int64_t start_us = 0;  // clock value when start() ran
  int64_t stop_us = 0;
  std::vector<ThreadEvents> threads;  // threads that recorded at least one event
};

namespace detail {
extern std::atomic<bool> enabled;
using FillFn = void (*)(void* context, Args& args);
// Appends an open span to this thread's buffer, filling its arguments with fill(context) when
// given; returns its handle (-1 when not recorded).
int64_t begin_span(Category c, const char* name, std::string* dynamic_name, FillFn fill,
                   void* context);
void end_span(int64_t handle);
void add_span_arg(int64_t handle, std::string key, std::string value);
template <class F>
void call_fill(void* context, Args& args) {
  (*static_cast<F*>(context))(args);
}
}  // namespace detail

// The only cost of the profiler while it is off.
inline bool enabled() noexcept { return detail::enabled.load(std::memory_order_relaxed); }

// Microseconds on one steady clock (the same across the processes of one machine; across
// machines the multi-worker profiler estimates offsets, see io/chrome_trace.h).
int64_t now_us() noexcept;
// Tests replace the clock with a fake one (nullptr restores the steady clock).
void set_clock_for_testing(int64_t (*clock)());

// Starts a recording: clears what an earlier one left and turns recording on. ValueError when
// one is already running.
void start();
// Turns recording off and returns every thread's events; spans still open are dropped.
// ValueError when none is running.
Session stop();

// Names the calling thread in traces ("main", "prefetch", "replica 1"); cheap, kept across
// sessions.
void set_thread_name(std::string name);

namespace detail {
void record_counter(const char* name, double value) noexcept;
}
// A counter sample ("bytes_in_use" = 1.5e6) at now on this thread; nothing while off.
inline void counter(const char* name, double value) noexcept {
  if (enabled()) detail::record_counter(name, value);
}

// Records a span from construction to destruction on the calling thread. `name` must outlive
// the session (a string literal, an op's static name) unless it is passed as a std::string.
// The optional callable fills the span's arguments and runs only when recording.
class Span {
 public:
  Span(Category c, const char* name) noexcept : handle_(-1) {
    if (enabled()) handle_ = detail::begin_span(c, name, nullptr, nullptr, nullptr);
  }
  template <class FillArgs>
  Span(Category c, const char* name, FillArgs&& fill) : handle_(-1) {
    if (enabled()) {
      using F = std::remove_reference_t<FillArgs>;
      handle_ = detail::begin_span(c, name, nullptr, &detail::call_fill<F>,
                                   const_cast<void*>(static_cast<const void*>(&fill)));
    }
  }
  // A name built only when recording: make_name() returns std::string (a layer's path).
  template <class MakeName, class FillArgs>
  Span(Category c, MakeName&& make_name, FillArgs&& fill, int /*dynamic_name_tag*/) : handle_(-1) {
    if (enabled()) {
      std::string name = make_name();
      using F = std::remove_reference_t<FillArgs>;
      handle_ = detail::begin_span(c, nullptr, &name, &detail::call_fill<F>,
                                   const_cast<void*>(static_cast<const void*>(&fill)));
    }
  }
  ~Span() {
    if (handle_ >= 0) detail::end_span(handle_);
  }
  Span(const Span&) = delete;
  Span& operator=(const Span&) = delete;

  bool recording() const noexcept { return handle_ >= 0; }
  // Adds an argument after the fact (bytes known only once the work ran).
  void add_arg(std::string key, std::string value) {
    if (handle_ >= 0) detail::add_span_arg(handle_, std::move(key), std::move(value));
  }

 private:
  int64_t handle_;
};

// Adds an argument to the innermost open span of this thread (the kernel that an op's backend
// chose is known only inside the backend, below the op's span); nothing while off.
namespace detail {
void annotate_innermost(const char* key, std::string value);
}
template <class MakeValue>
void annotate(const char* key, MakeValue&& make_value) {
  if (enabled()) detail::annotate_innermost(key, make_value());
}

// A span whose start is marked by one call and whose end by another, for an op recorded in two
// places: autograd ops check their inputs first (mark_op_start) and record themselves last
// (end_marked_op). A mark not ended by the next mark or span boundary is dropped.
namespace detail {
void mark_op_start_slow();
bool has_op_mark() noexcept;
void end_marked_op_slow(const char* name, Args args);
}  // namespace detail
inline void mark_op_start() {
  if (enabled()) detail::mark_op_start_slow();
}
template <class FillArgs>
void end_marked_op(const char* name, FillArgs&& fill) {
  if (!enabled() || !detail::has_op_mark()) return;
  Args a;
  fill(a);
  detail::end_marked_op_slow(name, std::move(a));
}

}  // namespace osprey::trace
