// A line plot as an <svg> string: one or more series of (x, y) points on shared axes, with
// ticks, axis labels and a legend. Points whose x or y is NaN or infinite are skipped and break
// the line there, so a diverged epoch leaves a gap rather than a spike or an invalid path.
//   LinePlot p{.title = "loss", .x_label = "epoch", .y_label = "loss"};
//   p.series.push_back({.name = "train", .x = {1, 2, 3}, .y = {0.9, 0.6, 0.5}});
//   p.series.push_back({.name = "validation", .x = {1, 2, 3}, .y = {1.0, 0.7, 0.65},
//                       .dashed = true});
//   std::string svg = line_plot(p);
#pragma once

#include <string>
#include <vector>

namespace osprey::cli::report {

struct Series {
  std::string name{};
  std::vector<double> x{}, y{};  // the same length
  bool dashed = false;
  bool line = true;      // false: the points alone (a scatter)
  bool markers = true;   // a dot at each point
  bool step = false;     // a staircase (best-so-far curves): horizontal, then vertical
  std::string colour{};  // "" takes the series' place in the palette
};

struct LinePlot {
  std::string title{};
  std::string x_label{}, y_label{};
  std::vector<Series> series{};
  bool log_y = false;
  int width = 560, height = 320;
};

std::string line_plot(const LinePlot& plot);

}  // namespace osprey::cli::report
