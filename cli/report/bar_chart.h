// A horizontal bar chart as an <svg> string: one labelled bar per value, drawn from zero, with
// the value printed at its end. Ensemble weights and per-stage speeds use it. A value that is NaN
// or infinite gets no bar, only its printed value.
//   std::string svg = bar_chart({.title = "ensemble weights", .value_label = "weight",
//                                .labels = {"cnn_1", "xgboost"}, .values = {0.7, 0.3}});
#pragma once

#include <string>
#include <vector>

namespace osprey::cli::report {

struct BarChart {
  std::string title{};
  std::string value_label{};          // under the value axis
  std::vector<std::string> labels{};  // one per value
  std::vector<double> values{};
  int width = 560;
};

std::string bar_chart(const BarChart& chart);

}  // namespace osprey::cli::report
