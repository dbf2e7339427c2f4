// Per-thread buffers without a lock on the recording path. Each thread appends to its own
// Buffer; the only other party is start()/stop(), which must not read or reset a buffer while
// its owner writes. The handshake is Dekker's: the owner raises `writing` and then checks
// `closed`; stop() raises `closed` and then waits for `writing` to fall (both sequentially
// consistent), so at most one of them touches the buffer at a time. Buffers outlive their
// threads (the registry holds them) so a prefetch thread that exited still shows in the trace.
#include "osprey/core/trace.h"

#include <chrono>
#include <memory>
#include <mutex>
#include <thread>

#include "osprey/core/error.h"

namespace osprey::trace {

namespace detail {
std::atomic<bool> enabled{false};
}  // namespace detail

namespace {

struct Buffer {
  int tid = 0;
  std::string name;
  uint32_t generation = 0;
  std::vector<Event> events;
  std::vector<int64_t> open;  // indices of the open spans, innermost last
  int64_t mark_us = 0;
  int64_t mark_depth = -1;  // open.size() when the op mark was set; -1: no mark
  Args mark_args;           // annotations made while the marked op ran (its kernel)
  std::atomic<bool> writing{false};
  std::atomic<bool> closed{true};
};

struct Registry {
  std::mutex mutex;
  std::vector<std::shared_ptr<Buffer>> buffers;
  int next_tid = 1;
  bool running = false;
  uint32_t generation = 0;
  int64_t start_us = 0;
};

Registry& registry() {
  static Registry r;
  return r;
}

int64_t steady_now() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::atomic<int64_t (*)()> clock_fn{&steady_now};

Buffer& this_buffer() {
  thread_local std::shared_ptr<Buffer> buffer = [] {
    auto b = std::make_shared<Buffer>();
    Registry& r = registry();
    const std::lock_guard lock(r.mutex);
    b->tid = r.next_tid++;
    b->name = "thread " + std::to_string(b->tid);
    b->generation = r.generation;
    b->closed.store(!r.running, std::memory_order_seq_cst);
    r.buffers.push_back(b);
    return b;
  }();
  return *buffer;
}

// The owner's side of the handshake: true when it may touch its buffer until leave().
bool enter(Buffer& b) {
  b.writing.store(true, std::memory_order_seq_cst);
  if (b.closed.load(std::memory_order_seq_cst)) {
    b.writing.store(false, std::memory_order_release);
    return false;
  }
  return true;
}
void leave(Buffer& b) { b.writing.store(false, std::memory_order_release); }

// The collector's side: after this the owner cannot write until `closed` falls again.
void close(Buffer& b) {
  b.closed.store(true, std::memory_order_seq_cst);
  while (b.writing.load(std::memory_order_seq_cst)) std::this_thread::yield();
}

int64_t make_handle(uint32_t generation, size_t index) {
  return static_cast<int64_t>((static_cast<uint64_t>(generation) << 32) | index);
}

// The event a handle names, or null when it belongs to an earlier session.
Event* lookup(Buffer& b, int64_t handle) {
  const auto generation = static_cast<uint32_t>(static_cast<uint64_t>(handle) >> 32);
  const auto index = static_cast<size_t>(static_cast<uint64_t>(handle) & 0xffffffffU);
  if (generation != b.generation || index >= b.events.size()) return nullptr;
  return &b.events[index];
}

}  // namespace

const char* category_name(Category c) noexcept {
  switch (c) {
    case Category::op:
      return "op";
    case Category::op_backward:
      return "op_backward";
    case Category::layer:
      return "layer";
    case Category::optimizer:
      return "optimizer";
    case Category::data:
      return "data";
    case Category::collective:
      return "collective";
    case Category::step:
      return "step";
    case Category::other:
      break;
  }
  return "other";
}

int64_t now_us() noexcept { return clock_fn.load(std::memory_order_relaxed)(); }

void set_clock_for_testing(int64_t (*clock)()) {
  clock_fn.store(clock ? clock : &steady_now, std::memory_order_relaxed);
}

void start() {
  Registry& r = registry();
  const std::lock_guard lock(r.mutex);
  OSPREY_CHECK(!r.running, "trace::start: a profiling session is already running");
  ++r.generation;
  // Buffers of threads that have exited and recorded nothing new are dropped here.
  std::erase_if(r.buffers, [](const std::shared_ptr<Buffer>& b) { return b.use_count() == 1; });
  for (const auto& b : r.buffers) {  // all closed: their owners cannot be writing
    b->events.clear();
    b->open.clear();
    b->mark_depth = -1;
    b->generation = r.generation;
    b->closed.store(false, std::memory_order_seq_cst);
  }
  r.running = true;
  r.start_us = now_us();
  detail::enabled.store(true, std::memory_order_relaxed);
}

Session stop() {
  Registry& r = registry();
  const std::lock_guard lock(r.mutex);
  OSPREY_CHECK(r.running, "trace::stop: no profiling session is running");
  detail::enabled.store(false, std::memory_order_relaxed);
  r.running = false;
  Session s;
  s.start_us = r.start_us;
  s.stop_us = now_us();
  for (const auto& b : r.buffers) {
    close(*b);
    ThreadEvents t;
    t.tid = b->tid;
    t.thread_name = b->name;
    for (Event& e : b->events) {
      if (e.is_counter || e.dur_us >= 0) t.events.push_back(std::move(e));
    }
    b->events.clear();
    b->open.clear();
    if (!t.events.empty()) s.threads.push_back(std::move(t));
  }
  return s;
}

void set_thread_name(std::string name) {
  Buffer& b = this_buffer();
  const std::lock_guard lock(registry().mutex);
  b.name = std::move(name);
}

namespace detail {

int64_t begin_span(Category c, const char* name, std::string* dynamic_name, FillFn fill,
                   void* context) {
  Buffer& b = this_buffer();
  if (!enter(b)) return -1;
  // A span that cannot be stored (no memory, arguments that fail to build) is dropped: the
  // profiler never fails the work it watches.
  try {
    Event e;
    e.category = c;
    e.name = dynamic_name ? std::move(*dynamic_name) : std::string(name);
    if (fill) fill(context, e.args);
    e.start_us = now_us();  // after the arguments, so building them is not counted
    b.open.reserve(b.open.size() + 1);
    b.events.push_back(std::move(e));
    b.open.push_back(static_cast<int64_t>(b.events.size() - 1));
  } catch (...) {
    leave(b);
    return -1;
  }
  const int64_t handle = make_handle(b.generation, b.events.size() - 1);
  leave(b);
  return handle;
}

void end_span(int64_t handle) {
  const int64_t end = now_us();
  Buffer& b = this_buffer();
  if (!enter(b)) return;
  if (Event* e = lookup(b, handle)) {
    e->dur_us = end - e->start_us;
    const auto index = static_cast<int64_t>(static_cast<uint64_t>(handle) & 0xffffffffU);
    // Spans end innermost first; one that ends out of order is removed where it sits.
    for (auto it = b.open.rbegin(); it != b.open.rend(); ++it) {
      if (*it == index) {
        b.open.erase(std::next(it).base());
        break;
      }
    }
  }
  leave(b);
}

void add_span_arg(int64_t handle, std::string key, std::string value) {
  Buffer& b = this_buffer();
  if (!enter(b)) return;
  try {
    if (Event* e = lookup(b, handle)) e->args.emplace_back(std::move(key), std::move(value));
  } catch (...) {  // dropped, as in begin_span
  }
  leave(b);
}

void record_counter(const char* name, double value) noexcept {
  Buffer& b = this_buffer();
  if (!enter(b)) return;
  try {  // the allocator counts from noexcept paths: a sample that cannot be stored is dropped
    Event e;
    e.is_counter = true;
    e.name = name;
    e.start_us = now_us();
    e.dur_us = 0;
    e.value = value;
    b.events.push_back(std::move(e));
  } catch (...) {
  }
  leave(b);
}

void annotate_innermost(const char* key, std::string value) {
  Buffer& b = this_buffer();
  if (!enter(b)) return;
  try {
    if (b.mark_depth == static_cast<int64_t>(b.open.size())) {
      b.mark_args.emplace_back(key, std::move(value));  // the marked op is the innermost
    } else if (!b.open.empty()) {
      b.events[b.open.back()].args.emplace_back(key, std::move(value));
    }
  } catch (...) {  // dropped, as in begin_span
  }
  leave(b);
}

void mark_op_start_slow() {
  Buffer& b = this_buffer();
  if (!enter(b)) return;
  b.mark_us = now_us();
  b.mark_depth = static_cast<int64_t>(b.open.size());
  b.mark_args.clear();
  leave(b);
}

bool has_op_mark() noexcept {
  Buffer& b = this_buffer();
  if (!enter(b)) return false;
  const bool marked = b.mark_depth >= 0;
  leave(b);
  return marked;
}

void end_marked_op_slow(const char* name, Args args) {
  const int64_t end = now_us();
  Buffer& b = this_buffer();
  if (!enter(b)) return;
  // Spans opened inside the op (a collective in sync batch norm) have closed again by now; a
  // mark left at another depth belongs to an op that never recorded itself.
  if (b.mark_depth == static_cast<int64_t>(b.open.size())) {
    Event e;
    e.category = Category::op;
    e.name = name;
    e.start_us = b.mark_us;
    e.dur_us = end - b.mark_us;
    e.args = std::move(args);
    try {
      for (auto& a : b.mark_args) e.args.push_back(std::move(a));
      b.events.push_back(std::move(e));
    } catch (...) {  // dropped, as in begin_span
    }
  }
  b.mark_depth = -1;
  b.mark_args.clear();
  leave(b);
}

}  // namespace detail

}  // namespace osprey::trace
