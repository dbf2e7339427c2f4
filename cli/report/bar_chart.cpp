#include "cli/report/bar_chart.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "cli/report/svg.h"

namespace osprey::cli::report {

std::string bar_chart(const BarChart& c) {
  constexpr double kRow = 26, kTop = 32, kBottom = 40;
  const size_t n = std::min(c.labels.size(), c.values.size());
  // Room on the left for the longest label (about 7 px a character), at most half the width.
  size_t longest = 4;
  for (size_t i = 0; i < n; ++i) longest = std::max(longest, c.labels[i].size());
  const double left = std::min(12 + 7.0 * static_cast<double>(longest), c.width / 2.0);
  const double right = c.width - 64.0;  // the printed values sit past the longest bar
  const double bottom = kTop + kRow * static_cast<double>(std::max<size_t>(n, 1));
  const int height = static_cast<int>(bottom + kBottom);

  std::vector<double> values(c.values.begin(), c.values.begin() + static_cast<std::ptrdiff_t>(n));
  values.push_back(0);  // bars start at zero
  const Axis axis = Axis::fit(values);
  const double zero = axis.to_pixel(0, left, right);

  std::string s = svg_open(c.width, height, c.title);
  s += svg_text(8, 18, c.title, "start", "class=\"title\"");
  for (const double t : axis.ticks()) {
    const double x = axis.to_pixel(t, left, right);
    s += fmt::format("<line class=\"grid\" x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\"/>\n", px(x),
                     px(kTop), px(bottom));
    s += svg_text(x, bottom + 16, format_number(t), "middle", "class=\"tick\"");
  }
  s += svg_text((left + right) / 2, bottom + 33, c.value_label, "middle", "class=\"label\"");
  for (size_t i = 0; i < n; ++i) {
    const double y = kTop + kRow * static_cast<double>(i);
    const double v = c.values[i];
    s += svg_text(left - 6, y + kRow / 2 + 4, c.labels[i], "end", "class=\"legend\"");
    double end = zero;
    if (std::isfinite(v)) {
      end = axis.to_pixel(v, left, right);
      s += fmt::format(
          "<rect class=\"bar\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\">"
          "<title>{}: {}</title></rect>\n",
          px(std::min(zero, end)), px(y + 4), px(std::abs(end - zero)), px(kRow - 8),
          series_colour(i), escape(c.labels[i]), format_number(v));
    }
    s += svg_text(std::max(zero, end) + 4, y + kRow / 2 + 4, format_number(v), "start",
                  "class=\"tick\"");
  }
  s += fmt::format("<line class=\"axis\" x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\"/>\n", px(zero),
                   px(kTop), px(bottom));
  return s + svg_close();
}

}  // namespace osprey::cli::report
