#include "cli/report/parallel_coordinates.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "cli/report/history.h"
#include "cli/report/svg.h"

namespace osprey::cli::report {

namespace {

const Cell& cell(const ParallelCoordinates& p, size_t row, size_t dim) {
  static const Cell kAbsent;
  return dim < p.rows[row].size() ? p.rows[row][dim] : kAbsent;
}

std::string as_category(const Cell& c) {
  if (const auto* s = std::get_if<std::string>(&c)) return *s;
  if (const auto* v = std::get_if<double>(&c)) return format_number(*v);
  return "";
}

// One dimension's axis: categorical (its categories) or numeric (an Axis over its numbers).
struct AxisLayout {
  std::vector<std::string> categories;  // empty: numeric
  Axis axis;
};

AxisLayout layout(const ParallelCoordinates& p, size_t d) {
  AxisLayout a;
  a.categories = detail::parallel_categories(p, d);
  if (a.categories.empty()) {
    std::vector<double> values;
    for (size_t r = 0; r < p.rows.size(); ++r)
      if (const auto* v = std::get_if<double>(&cell(p, r, d))) values.push_back(*v);
    a.axis = Axis::fit(values, {.log = p.dimensions[d].log, .max_ticks = 5});
  }
  return a;
}

double fraction(const AxisLayout& a, const Cell& c) {
  if (std::holds_alternative<std::monostate>(c)) return kNaN;
  if (!a.categories.empty()) {
    const auto it = std::find(a.categories.begin(), a.categories.end(), as_category(c));
    const auto n = static_cast<double>(a.categories.size());
    return n == 1 ? 0.5 : static_cast<double>(it - a.categories.begin()) / (n - 1);
  }
  const double v = std::get<double>(c);  // a string makes the dimension categorical
  return a.axis.placeable(v) ? a.axis.to_pixel(v, 0, 1) : kNaN;
}

}  // namespace

namespace detail {

std::vector<std::string> parallel_categories(const ParallelCoordinates& p, size_t d) {
  std::vector<std::string> cats = p.dimensions[d].categories;
  bool categorical = !cats.empty();
  for (size_t r = 0; r < p.rows.size(); ++r)
    categorical = categorical || std::holds_alternative<std::string>(cell(p, r, d));
  if (!categorical) return {};
  for (size_t r = 0; r < p.rows.size(); ++r) {
    const Cell& c = cell(p, r, d);
    if (std::holds_alternative<std::monostate>(c)) continue;
    if (std::find(cats.begin(), cats.end(), as_category(c)) == cats.end())
      cats.push_back(as_category(c));
  }
  return cats;
}

std::vector<std::vector<double>> parallel_positions(const ParallelCoordinates& p) {
  std::vector<AxisLayout> axes;
  for (size_t d = 0; d < p.dimensions.size(); ++d) axes.push_back(layout(p, d));
  std::vector<std::vector<double>> out(p.rows.size());
  for (size_t r = 0; r < p.rows.size(); ++r)
    for (size_t d = 0; d < axes.size(); ++d) out[r].push_back(fraction(axes[d], cell(p, r, d)));
  return out;
}

}  // namespace detail

std::string parallel_coordinates(const ParallelCoordinates& p) {
  const double left = 70, right = p.width - 70.0, top = 56, bottom = p.height - 60.0;
  const size_t n = p.dimensions.size();
  const auto axis_x = [&](size_t d) {
    return n == 1 ? (left + right) / 2
                  : left + (right - left) * static_cast<double>(d) / static_cast<double>(n - 1);
  };
  const auto to_y = [&](double f) { return bottom + f * (top - bottom); };
  std::vector<AxisLayout> axes;
  for (size_t d = 0; d < n; ++d) axes.push_back(layout(p, d));
  const std::vector<std::vector<double>> pos = detail::parallel_positions(p);

  // Colours: the ramp over the finite values, best = 1; rows drawn worst first, NaN before all.
  std::vector<double> t(p.rows.size(), kNaN);
  double lo = kNaN, hi = kNaN;
  for (size_t r = 0; r < p.rows.size() && r < p.colour_by.size(); ++r) {
    if (!std::isfinite(p.colour_by[r])) continue;
    lo = std::isnan(lo) ? p.colour_by[r] : std::min(lo, p.colour_by[r]);
    hi = std::isnan(hi) ? p.colour_by[r] : std::max(hi, p.colour_by[r]);
  }
  for (size_t r = 0; r < p.rows.size() && r < p.colour_by.size(); ++r) {
    if (!std::isfinite(p.colour_by[r])) continue;
    t[r] = hi == lo ? 1.0 : (p.colour_by[r] - lo) / (hi - lo);
    if (!p.higher_is_better) t[r] = 1 - t[r];
  }
  std::vector<size_t> order(p.rows.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::isnan(t[a]) ? !std::isnan(t[b]) : !std::isnan(t[b]) && t[a] < t[b];
  });

  std::string s = svg_open(p.width, p.height, p.title);
  s += svg_text(8, 18, p.title, "start", "class=\"title\"");
  for (const size_t r : order) {
    std::string d;
    bool open = false;
    for (size_t k = 0; k < n; ++k) {
      if (std::isnan(pos[r][k])) {
        open = false;
        continue;
      }
      d += fmt::format("{}{} {}", open ? " L" : (d.empty() ? "M" : " M"), px(axis_x(k)),
                       px(to_y(pos[r][k])));
      open = true;
    }
    if (d.empty()) continue;
    const std::string name = r < p.row_names.size() ? p.row_names[r] : fmt::format("row {}", r);
    s += fmt::format(
        "<path class=\"pc-line\" d=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"1.8\" "
        "stroke-opacity=\"0.85\"><title>{}</title></path>\n",
        d, ramp_colour(t[r]), escape(name));
  }
  for (size_t k = 0; k < n; ++k) {
    const double x = axis_x(k);
    s += fmt::format("<line class=\"axis\" x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\"/>\n", px(x),
                     px(top), px(bottom));
    // Names alternate between two lines so that neighbours' long names do not collide.
    s += svg_text(x, k % 2 == 0 ? 34 : 47, p.dimensions[k].name, "middle", "class=\"label\"");
    const auto tick = [&](double f, const std::string& text) {
      s += svg_text(x - 4, to_y(f) + 4, text, "end", "class=\"tick halo\"");
    };
    if (!axes[k].categories.empty()) {
      const auto m = static_cast<double>(axes[k].categories.size());
      for (size_t c = 0; c < axes[k].categories.size(); ++c)
        tick(m == 1 ? 0.5 : static_cast<double>(c) / (m - 1), axes[k].categories[c]);
    } else {
      for (const double v : axes[k].axis.ticks())
        tick(axes[k].axis.to_pixel(v, 0, 1), format_number(v));
    }
  }
  // The colour key: ten swatches from worst to best, the values at the ends.
  if (!std::isnan(lo)) {
    const double kx = left, ky = p.height - 22.0;
    s += svg_text(kx, ky + 11, fmt::format("colour: {}", p.colour_label), "start",
                  "class=\"legend\"");
    // "colour: <label>" at about 7 px a character, then room for the worst value, right-aligned.
    const double start = kx + 7.0 * static_cast<double>(p.colour_label.size() + 8) + 64;
    s += svg_text(start - 4, ky + 11, format_number(p.higher_is_better ? lo : hi), "end",
                  "class=\"tick\"");
    for (int i = 0; i < 10; ++i) {
      s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"16\" height=\"14\" fill=\"{}\"/>\n",
                       px(start + 16 * i), px(ky), ramp_colour(i / 9.0));
    }
    s += svg_text(start + 164, ky + 11,
                  fmt::format("{} (best)", format_number(p.higher_is_better ? hi : lo)), "start",
                  "class=\"tick\"");
  }
  return s + svg_close();
}

}  // namespace osprey::cli::report
