// The training-curve and tuner sections of `osprey report` (report.h).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "cli/report/html.h"
#include "cli/report/line_plot.h"
#include "cli/report/parallel_coordinates.h"
#include "cli/report/report.h"
#include "cli/report/svg.h"

namespace osprey::cli::report::detail {

namespace {

// Plots of one run's curves: per metric, its training values and its validation ones (val_<name>),
// loss first, then accuracy, then the others by name. A metric with no finite value is left out.
std::string curve_plots(const Curves& c) {
  const auto finite = [&](const std::string& name) {
    const auto it = c.metrics.find(name);
    return it != c.metrics.end() && std::any_of(it->second.begin(), it->second.end(),
                                                [](double v) { return std::isfinite(v); });
  };
  std::vector<std::string> bases;
  for (const auto& [name, values] : c.metrics) {
    const std::string base = name.starts_with("val_") ? name.substr(4) : name;
    if (finite(name) && std::find(bases.begin(), bases.end(), base) == bases.end())
      bases.push_back(base);
  }
  const auto rank = [](const std::string& b) { return b == "loss" ? 0 : b == "accuracy" ? 1 : 2; };
  std::stable_sort(bases.begin(), bases.end(),
                   [&](const std::string& a, const std::string& b) { return rank(a) < rank(b); });
  std::string s;
  for (const std::string& base : bases) {
    LinePlot p{.title = fmt::format("{}: {}", c.title, base), .x_label = "epoch", .y_label = base};
    if (finite(base)) p.series.push_back({.name = "train", .x = c.epochs, .y = c.metrics.at(base)});
    if (finite("val_" + base)) {
      p.series.push_back({.name = "validation",
                          .x = c.epochs,
                          .y = c.metrics.at("val_" + base),
                          .dashed = true,
                          .colour = series_colour(1)});
    }
    s += line_plot(p);
  }
  return s;
}

std::string cell_text(const Cell* c) {
  if (c == nullptr || std::holds_alternative<std::monostate>(*c)) return "";
  if (const auto* d = std::get_if<double>(c)) return format_number(*d);
  return std::get<std::string>(*c);
}

std::string study_name(const ReportData& data, const Study& s) {
  const auto rel = std::filesystem::relative(s.dir, data.dir);
  return rel.empty() || rel == "." ? data.dir.filename().string() : rel.string();
}

std::string objective_plot(const Study& s) {
  Series trials{.name = "trial", .line = false, .colour = "#4a78a8"};
  Series best{.name = "best so far", .markers = false, .step = true, .colour = "#ff7f0e"};
  double so_far = kNaN;
  for (size_t i = 0; i < s.trials.size(); ++i) {
    const TrialInfo& t = s.trials[i];
    const double score = t.score ? *t.score : kNaN;
    if (std::isfinite(score) &&
        (std::isnan(so_far) || (s.maximize ? score > so_far : score < so_far)))
      so_far = score;
    trials.x.push_back(static_cast<double>(i + 1));
    trials.y.push_back(score);
    best.x.push_back(static_cast<double>(i + 1));
    best.y.push_back(so_far);
  }
  return line_plot({.title = fmt::format("{} by trial ({})", s.objective,
                                         s.maximize ? "higher is better" : "lower is better"),
                    .x_label = "trial, in order of creation",
                    .y_label = s.objective,
                    .series = {trials, best}});
}

// The axes: each hyperparameter the search varied, the epochs a successive-halving trial trained
// to (tuner/epochs), then the objective.
std::string hyperparameter_plot(const Study& s) {
  ParallelCoordinates pc{.title = "hyperparameters of each trial, coloured by " + s.objective,
                         .colour_label = s.objective,
                         .higher_is_better = s.maximize};
  std::vector<std::string> names;
  for (const SpaceEntry& e : s.space) {
    if (e.kind == "Fixed") continue;
    pc.dimensions.push_back({.name = e.name, .log = e.log, .categories = e.categories});
    names.push_back(e.name);
  }
  const bool epochs = std::any_of(s.trials.begin(), s.trials.end(),
                                  [](const TrialInfo& t) { return t.value("tuner/epochs"); });
  if (epochs) {
    pc.dimensions.push_back({.name = "epochs"});
    names.push_back("tuner/epochs");
  }
  pc.dimensions.push_back({.name = s.objective});
  for (const TrialInfo& t : s.trials) {
    std::vector<Cell> row;
    row.reserve(names.size() + 1);
    for (const std::string& n : names) row.push_back(t.value(n) ? *t.value(n) : Cell{});
    row.push_back(t.score && std::isfinite(*t.score) ? Cell{*t.score} : Cell{});
    pc.rows.push_back(std::move(row));
    pc.row_names.push_back(
        fmt::format("trial {}: {}", t.id, t.score ? format_number(*t.score) : t.status));
    pc.colour_by.push_back(t.score ? *t.score : kNaN);
  }
  return parallel_coordinates(pc);
}

std::string trials_table(const Study& s) {
  std::vector<std::string> header = {"trial", "status", s.objective, "best epoch", "epochs"};
  std::vector<std::string> names;
  for (const SpaceEntry& e : s.space)
    if (e.kind != "Fixed") names.push_back(e.name);
  header.insert(header.end(), names.begin(), names.end());
  header.push_back("message");
  std::vector<std::vector<std::string>> rows;
  for (const TrialInfo& t : s.trials) {
    std::vector<std::string> row = {t.id, t.status, t.score ? format_number(*t.score) : "",
                                    t.best_step >= 0 ? std::to_string(t.best_step + 1) : "",
                                    t.curves.empty() ? "" : format_number(t.curves.epochs.back())};
    for (const std::string& n : names) row.push_back(cell_text(t.value(n)));
    row.push_back(t.message);
    rows.push_back(std::move(row));
  }
  return html_table(header, rows);
}

}  // namespace

std::string curves_section(const ReportData& data) {
  std::string body;
  for (const Curves& c : data.curves) {
    body += fmt::format("<h3>{}</h3>\n<p class=\"meta\">{} epochs, from {}</p>\n", escape(c.title),
                        c.epochs.size(), escape(c.source));
    body += curve_plots(c);
  }
  for (const Study& s : data.studies) {
    const TrialInfo* best = s.best();
    if (best == nullptr) continue;
    Curves c = s.curves_of(*best);
    c.title = fmt::format("best trial {} of {}", best->id, study_name(data, s));
    if (c.empty()) continue;
    body += fmt::format("<h3>{}</h3>\n<p class=\"meta\">{} {}, {} epochs{}</p>\n", escape(c.title),
                        escape(s.objective), format_number(*best->score), c.epochs.size(),
                        best->executions > 1
                            ? fmt::format(" (the first of its {} executions)", best->executions)
                            : "");
    body += curve_plots(c);
  }
  if (body.empty()) {
    return html_absent_section(
        "curves", "Training curves",
        "No per-epoch logs here: no history.json, no CSV log with an epoch column, no trial with "
        "a score.");
  }
  return html_section("curves", "Training curves", body);
}

std::string trials_section(const ReportData& data) {
  if (data.studies.empty()) {
    return html_absent_section("trials", "Tuner trials",
                               "No tuner study here: no oracle.json in this folder or just below.");
  }
  std::string body;
  for (const Study& s : data.studies) {
    std::map<std::string, int> by_status;
    for (const TrialInfo& t : s.trials) ++by_status[t.status];
    std::string counts;
    for (const auto& [status, n] : by_status) counts += fmt::format(", {} {}", n, status);
    const TrialInfo* best = s.best();
    body += fmt::format("<h3>{}</h3>\n<p class=\"meta\">{} on {} ({}): {} trials{}{}</p>\n",
                        escape(study_name(data, s)), escape(s.tuner), escape(s.objective),
                        s.maximize ? "max" : "min", s.trials.size(), escape(counts),
                        best ? escape(fmt::format("; best trial {}, {} {}", best->id, s.objective,
                                                  format_number(*best->score)))
                             : "");
    if (s.trials.empty()) continue;
    body += objective_plot(s);
    body += hyperparameter_plot(s);
    body += trials_table(s);
  }
  return html_section("trials", "Tuner trials", body);
}

}  // namespace osprey::cli::report::detail
