// The profiler's summary table, like torch.profiler's key_averages().table(): one row per span
// name (op, backward node, layer, optimizer, data wait, collective), with its calls, self time
// (the span's time minus its child spans' on the same thread), total time, share of all self
// time and mean. Optionally op rows are split by the layer whose call they ran in.
//   std::vector<io::SummaryRow> rows = io::summarize_trace(session);
//   std::string text = io::format_summary_table(rows, {.top = 20});
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "osprey/core/trace.h"

namespace osprey::io {

struct SummaryRow {
  std::string name;      // "matmul", "linear", "sequential/dense" ...
  std::string category;  // trace::category_name of its spans
  std::string layer;     // the enclosing layer's path when grouped by layer, else ""
  int64_t calls = 0;
  int64_t self_us = 0;
  int64_t total_us = 0;
};

struct SummaryOptions {
  bool by_layer = false;  // split rows by the innermost enclosing layer span
};

// Rows sorted by self time, largest first (ties by name). Counters are not spans: not counted.
std::vector<SummaryRow> summarize_trace(const trace::Session& session,
                                        const SummaryOptions& options = {});

struct TableOptions {
  int top = 0;  // rows shown; 0: all
};
// A fixed-width text table with the columns Name, Category, Self %, Self, Total, Mean, Calls,
// and a last line with the sum of self times.
std::string format_summary_table(const std::vector<SummaryRow>& rows,
                                 const TableOptions& options = {});

}  // namespace osprey::io
