// Parallel coordinates as an <svg> string: one vertical axis per dimension (a hyperparameter,
// then the objective), one polyline per row (a trial) across them, coloured by a value (the
// objective) on a blue-to-yellow ramp, the best drawn last so it lies on top. A dimension is
// numeric (linear or log axis, "nice" ticks) or categorical (its values spaced evenly, in the
// order given, then in order of appearance); a row with no value on a dimension (a conditional
// hyperparameter that was inactive) breaks its line there.
//   ParallelCoordinates pc{.title = "trials", .colour_label = "val_accuracy"};
//   pc.dimensions = {{.name = "lr", .log = true}, {.name = "optimizer"}};
//   pc.rows = {{1e-3, std::string("adam")}, {3e-4, std::string("sgd")}};
//   pc.colour_by = {0.81, 0.74};
//   std::string svg = parallel_coordinates(pc);
#pragma once

#include <string>
#include <variant>
#include <vector>

namespace osprey::cli::report {

// One cell: absent, a number, or a category.
using Cell = std::variant<std::monostate, double, std::string>;

struct Dimension {
  std::string name{};
  bool log = false;                       // a numeric axis on a log scale
  std::vector<std::string> categories{};  // a categorical axis's values in order (may be empty)
};

struct ParallelCoordinates {
  std::string title{};
  std::vector<Dimension> dimensions{};
  std::vector<std::vector<Cell>> rows{};  // rows[row][dimension]
  std::vector<std::string> row_names{};   // shown when hovering a line (may be empty)
  std::vector<double> colour_by{};        // per row; NaN is drawn grey, under the others
  std::string colour_label{};
  bool higher_is_better = true;  // which end of colour_by is yellow and drawn on top
  int width = 760, height = 380;
};

std::string parallel_coordinates(const ParallelCoordinates& plot);

namespace detail {
// Where a row's cell lands on its axis as a fraction of the axis' height (0 bottom, 1 top), or
// NaN when it is absent or cannot be placed; exposed for the tests.
std::vector<std::vector<double>> parallel_positions(const ParallelCoordinates& plot);
// A dimension's categories after the rows are read: those given, then those met (numbers met on a
// categorical axis count as categories, formatted). Empty for a numeric dimension.
std::vector<std::string> parallel_categories(const ParallelCoordinates& plot, size_t dimension);
}  // namespace detail

}  // namespace osprey::cli::report
