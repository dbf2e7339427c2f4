#include "cli/report/line_plot.h"

#include <fmt/format.h>

#include <cmath>

#include "cli/report/svg.h"

namespace osprey::cli::report {

namespace {

// Where the data goes inside the picture: room on the left for the y ticks, at the top for the
// title and the legend, at the bottom for the x ticks and label.
struct Frame {
  double left, right, top, bottom;
};

std::string axes(const LinePlot& p, const Axis& x, const Axis& y, const Frame& f) {
  std::string s;
  for (const double t : y.ticks()) {
    const double py = y.to_pixel(t, f.bottom, f.top);
    s += fmt::format("<line class=\"grid\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>\n", px(f.left),
                     px(py), px(f.right), px(py));
    s += svg_text(f.left - 6, py + 4, format_number(t), "end", "class=\"tick\"");
  }
  for (const double t : x.ticks()) {
    const double pxx = x.to_pixel(t, f.left, f.right);
    s += fmt::format("<line class=\"axis\" x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\"/>\n",
                     px(pxx), px(f.bottom), px(f.bottom + 4));
    s += svg_text(pxx, f.bottom + 17, format_number(t), "middle", "class=\"tick\"");
  }
  s += fmt::format("<rect class=\"frame\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>\n",
                   px(f.left), px(f.top), px(f.right - f.left), px(f.bottom - f.top));
  s += svg_text((f.left + f.right) / 2, f.bottom + 34, p.x_label, "middle", "class=\"label\"");
  s += svg_text(
      14, (f.top + f.bottom) / 2, p.y_label, "middle",
      fmt::format("class=\"label\" transform=\"rotate(-90 14 {})\"", px((f.top + f.bottom) / 2)));
  return s;
}

// The series' path: runs of placeable points, each a move then lines (or steps).
std::string path_data(const Series& s, const Axis& x, const Axis& y, const Frame& f) {
  std::string d;
  bool open = false;
  double last_y = 0;
  for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
    if (!x.placeable(s.x[i]) || !y.placeable(s.y[i])) {
      open = false;
      continue;
    }
    const double px_ = x.to_pixel(s.x[i], f.left, f.right);
    const double py = y.to_pixel(s.y[i], f.bottom, f.top);
    if (!open) {
      d += fmt::format("M{} {}", px(px_), px(py));
    } else if (s.step) {
      d += fmt::format(" L{} {} L{} {}", px(px_), px(last_y), px(px_), px(py));
    } else {
      d += fmt::format(" L{} {}", px(px_), px(py));
    }
    open = true;
    last_y = py;
  }
  return d;
}

}  // namespace

std::string line_plot(const LinePlot& p) {
  std::vector<double> xs, ys;
  for (const Series& s : p.series) {
    xs.insert(xs.end(), s.x.begin(), s.x.end());
    ys.insert(ys.end(), s.y.begin(), s.y.end());
  }
  bool whole_x = true;
  for (const double v : xs) whole_x = whole_x && (!std::isfinite(v) || v == std::floor(v));
  const Axis x = Axis::fit(xs, {.integer = whole_x});
  const Axis y = Axis::fit(ys, {.log = p.log_y});
  const Frame f{.left = 64, .right = p.width - 16.0, .top = 40, .bottom = p.height - 44.0};

  std::string s = svg_open(p.width, p.height, p.title);
  s += svg_text(f.left, 18, p.title, "start", "class=\"title\"");
  s += axes(p, x, y, f);
  // The legend: one swatch and name per series, right-aligned on the line under the title.
  double lx = f.right;
  for (size_t i = p.series.size(); i-- > 0;) {
    const Series& ser = p.series[i];
    const std::string colour = ser.colour.empty() ? series_colour(i) : ser.colour;
    lx -= 7.0 * static_cast<double>(ser.name.size()) + 34;
    if (ser.line) {
      s += fmt::format(
          "<line x1=\"{}\" y1=\"30\" x2=\"{}\" y2=\"30\" stroke=\"{}\" stroke-width=\"2\"{}/>\n",
          px(lx), px(lx + 18), colour, ser.dashed ? " stroke-dasharray=\"5 3\"" : "");
    } else {  // a scatter: a dot
      s += fmt::format("<circle cx=\"{}\" cy=\"30\" r=\"3\" fill=\"{}\"/>\n", px(lx + 9), colour);
    }
    s += svg_text(lx + 22, 34, ser.name, "start", "class=\"legend\"");
  }
  for (size_t i = 0; i < p.series.size(); ++i) {
    const Series& ser = p.series[i];
    const std::string colour = ser.colour.empty() ? series_colour(i) : ser.colour;
    const std::string d = ser.line ? path_data(ser, x, y, f) : std::string();
    if (!d.empty()) {
      s += fmt::format(
          "<path class=\"series\" d=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"{}/>\n", d,
          colour, ser.dashed ? " stroke-dasharray=\"5 3\"" : "");
    }
    if (!ser.markers) continue;
    for (size_t k = 0; k < ser.x.size() && k < ser.y.size(); ++k) {
      if (!x.placeable(ser.x[k]) || !y.placeable(ser.y[k])) continue;
      s += fmt::format(
          "<circle cx=\"{}\" cy=\"{}\" r=\"3\" fill=\"{}\"><title>{}: {}, {}</title></circle>\n",
          px(x.to_pixel(ser.x[k], f.left, f.right)), px(y.to_pixel(ser.y[k], f.bottom, f.top)),
          colour, escape(ser.name), format_number(ser.x[k]), format_number(ser.y[k]));
    }
  }
  return s + svg_close();
}

}  // namespace osprey::cli::report
