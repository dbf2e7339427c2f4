// Self time needs each span's children. Spans of one thread nest (a scoped recorder cannot
// overlap another's end), so sorting them by start, longest first, and keeping a stack of the
// spans that are still open at each start gives every span its parent: the top of the stack
// once the spans that ended before it are popped.
#include "osprey/io/trace_summary.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <tuple>

namespace osprey::io {

namespace {

struct Timed {
  const trace::Event* event;
  int64_t self_us;
  std::string layer;  // innermost enclosing layer span's name
};

std::string format_us(int64_t us) {
  if (us >= 1000000) return fmt::format("{:.3f}s", static_cast<double>(us) / 1e6);
  if (us >= 1000) return fmt::format("{:.3f}ms", static_cast<double>(us) / 1e3);
  return fmt::format("{}us", us);
}

// Every span of one thread with its self time and enclosing layer.
std::vector<Timed> thread_spans(const trace::ThreadEvents& t) {
  std::vector<const trace::Event*> spans;
  for (const trace::Event& e : t.events) {
    if (!e.is_counter) spans.push_back(&e);
  }
  std::sort(spans.begin(), spans.end(), [](const trace::Event* a, const trace::Event* b) {
    return std::tie(a->start_us, b->dur_us) < std::tie(b->start_us, a->dur_us);
  });
  std::vector<Timed> out;
  out.reserve(spans.size());
  std::vector<size_t> open;  // indices into out
  for (const trace::Event* e : spans) {
    while (!open.empty()) {
      const trace::Event& top = *out[open.back()].event;
      if (e->start_us >= top.start_us + top.dur_us ||
          e->start_us + e->dur_us > top.start_us + top.dur_us) {
        open.pop_back();  // ended before e starts (or overlaps it: then not its parent)
      } else {
        break;
      }
    }
    std::string layer;
    if (!open.empty()) {
      Timed& parent = out[open.back()];
      parent.self_us -= e->dur_us;
      layer = parent.event->category == trace::Category::layer ? parent.event->name : parent.layer;
    }
    out.push_back({e, e->dur_us, std::move(layer)});
    open.push_back(out.size() - 1);
  }
  return out;
}

}  // namespace

std::vector<SummaryRow> summarize_trace(const trace::Session& session,
                                        const SummaryOptions& options) {
  std::map<std::tuple<std::string, std::string, std::string>, SummaryRow> rows;
  for (const trace::ThreadEvents& t : session.threads) {
    for (const Timed& s : thread_spans(t)) {
      const std::string category = trace::category_name(s.event->category);
      const bool split = options.by_layer && (s.event->category == trace::Category::op ||
                                              s.event->category == trace::Category::op_backward);
      const std::string layer = split ? s.layer : "";
      SummaryRow& row = rows[{s.event->name, category, layer}];
      row.name = s.event->name;
      row.category = category;
      row.layer = layer;
      ++row.calls;
      row.self_us += s.self_us;
      row.total_us += s.event->dur_us;
    }
  }
  std::vector<SummaryRow> out;
  out.reserve(rows.size());
  for (auto& [key, row] : rows) out.push_back(std::move(row));
  std::stable_sort(out.begin(), out.end(),
                   [](const SummaryRow& a, const SummaryRow& b) { return a.self_us > b.self_us; });
  return out;
}

std::string format_summary_table(const std::vector<SummaryRow>& rows, const TableOptions& options) {
  int64_t self_sum = 0;
  for (const SummaryRow& r : rows) self_sum += r.self_us;
  const size_t shown =
      options.top > 0 ? std::min(rows.size(), static_cast<size_t>(options.top)) : rows.size();
  size_t name_width = 4;
  auto label = [](const SummaryRow& r) {
    return r.layer.empty() ? r.name : r.layer + ": " + r.name;
  };
  for (size_t i = 0; i < shown; ++i) name_width = std::max(name_width, label(rows[i]).size());
  const std::string header =
      fmt::format("{:<{}}  {:<11}  {:>7}  {:>11}  {:>11}  {:>11}  {:>7}", "Name", name_width,
                  "Category", "Self %", "Self", "Total", "Mean", "Calls");
  const std::string rule(header.size(), '-');
  std::string out = rule + "\n" + header + "\n" + rule + "\n";
  for (size_t i = 0; i < shown; ++i) {
    const SummaryRow& r = rows[i];
    const double pct =
        self_sum > 0 ? 100.0 * static_cast<double>(r.self_us) / static_cast<double>(self_sum) : 0.0;
    out += fmt::format("{:<{}}  {:<11}  {:>6.2f}%  {:>11}  {:>11}  {:>11}  {:>7}\n", label(r),
                       name_width, r.category, pct, format_us(r.self_us), format_us(r.total_us),
                       format_us(r.calls > 0 ? r.total_us / r.calls : 0), r.calls);
  }
  out += rule + "\n";
  out += fmt::format("Self time total: {}\n", format_us(self_sum));
  return out;
}

}  // namespace osprey::io
