// The pieces every plot of `osprey report` shares: escaping for HTML and SVG text, compact
// number formatting, axes with "nice" ticks (linear or log, robust to one point, constant values
// and NaN), and the colours. The plots themselves (line_plot.h, bar_chart.h,
// parallel_coordinates.h) are pure functions from data to an <svg> string.
//   Axis y = Axis::fit({0.31, 0.52, NAN, 0.77});   // [0.3, 0.8], ticks 0.3 0.4 ... 0.8
//   double py = y.to_pixel(0.52, 300, 20);         // 300 is the bottom, 20 the top
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace osprey::cli::report {

// Text safe inside an HTML element or a quoted attribute, SVG's included: & < > " ' become
// entities, and control characters (other than tab and newline) become U+FFFD, which HTML
// parsers reject otherwise.
std::string escape(std::string_view text);

// A number as a tick or a table shows it: 4 significant digits, no trailing zeros ("0.001",
// "1.5e+04", "12"); "nan" and "inf" spelt out.
std::string format_number(double v);
// A pixel coordinate: one decimal, no trailing ".0".
std::string px(double v);

// One axis of a plot: its range and where its ticks go. Values that are not finite are ignored
// (and, on a log axis, values <= 0 too); with no value left the range is [0, 1]; a single value or
// constant values get a range around them, so every point lands inside the plot.
struct AxisOptions {
  bool log = false;
  bool integer = false;  // ticks on whole numbers only (epochs, trial numbers)
  int max_ticks = 6;
};
class Axis {
 public:
  static Axis fit(const std::vector<double>& values, AxisOptions options = {});
  // Maps v in [lo, hi] to [from, to] (pixels; from may be greater than to, as for y axes).
  double to_pixel(double v, double from, double to) const;
  // Whether v can be placed on this axis at all (finite; positive on a log axis).
  bool placeable(double v) const;

  double lo() const { return lo_; }
  double hi() const { return hi_; }
  bool log() const { return log_; }
  const std::vector<double>& ticks() const { return ticks_; }

 private:
  double lo_ = 0, hi_ = 1;
  bool log_ = false;
  std::vector<double> ticks_;
};

// The colours of successive series ("#1f77b4", ...), repeating after ten.
const char* series_colour(size_t i);
// A colour for t in [0, 1] on a blue (0) to yellow (1) ramp (viridis' ends); grey for NaN.
std::string ramp_colour(double t);

// An <svg> element's opening tag with a viewBox, the plot class and an accessible title, and its
// closing tag. Every plot starts and ends with these, so the page's tests can count plots.
std::string svg_open(int width, int height, std::string_view title);
std::string svg_close();
// <text> at (x, y); anchor is start, middle or end; extra is more attributes, already escaped.
std::string svg_text(double x, double y, std::string_view text, std::string_view anchor = "start",
                     std::string_view extra = "");

}  // namespace osprey::cli::report
