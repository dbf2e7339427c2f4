#include "cli/report/report.h"

#include <fmt/format.h>

#include <cmath>

#include "cli/report/bar_chart.h"
#include "cli/report/html.h"
#include "cli/report/svg.h"
#include "osprey/io/atomic_file.h"
#include "osprey/version.h"

namespace osprey::cli::report {

namespace fs = std::filesystem;

namespace detail {

namespace {

std::string percent(double v) { return std::isfinite(v) ? fmt::format("{:.2f}%", 100 * v) : ""; }

bool same_members(const EnsembleInfo& a, const EnsembleInfo& b) {
  if (a.members.size() != b.members.size()) return false;
  for (size_t i = 0; i < a.members.size(); ++i) {
    if (a.members[i].name != b.members[i].name || a.members[i].weight != b.members[i].weight)
      return false;
  }
  return true;
}

std::string folder_name(const ReportData& data, const fs::path& dir) {
  const fs::path rel = fs::relative(dir, data.dir);
  return rel.empty() || rel == "." ? data.dir.filename().string() : rel.string();
}

}  // namespace

std::string ensemble_section(const ReportData& data) {
  if (data.ensembles.empty()) {
    return html_absent_section("ensemble", "Ensemble",
                               "No ensemble here: no ensemble.json in this folder or just below.");
  }
  std::string body;
  for (size_t i = 0; i < data.ensembles.size(); ++i) {
    const EnsembleInfo& e = data.ensembles[i];
    const std::string name = folder_name(data, e.dir);
    // osprey run's quantized copy has the same members and weights: say so, not draw them twice.
    bool repeated = false;
    for (size_t k = 0; k < i && !repeated; ++k) {
      if (same_members(data.ensembles[k], e)) {
        body += fmt::format("<p class=\"note\">{}: the same members and weights as {}.</p>\n",
                            escape(name), escape(folder_name(data, data.ensembles[k].dir)));
        repeated = true;
      }
    }
    if (repeated) continue;
    body += fmt::format("<h3>{}</h3>\n<p class=\"meta\">{} members, weights fitted by {}</p>\n",
                        escape(name), e.members.size(), escape(e.combiner));
    BarChart chart{.title = "weight of each member", .value_label = "weight"};
    std::vector<std::vector<std::string>> rows;
    bool accuracies = false;
    for (const EnsembleMember& m : e.members) {
      chart.labels.push_back(m.name);
      chart.values.push_back(m.weight);
      accuracies = accuracies || std::isfinite(m.test_accuracy);
    }
    for (const EnsembleMember& m : e.members) {
      std::vector<std::string> row = {m.name, m.kind, format_number(m.weight)};
      if (accuracies) row.push_back(percent(m.test_accuracy));
      rows.push_back(std::move(row));
    }
    std::vector<std::string> header = {"member", "kind", "weight"};
    if (accuracies) header.emplace_back("test accuracy");
    body += bar_chart(chart) + html_table(header, rows);
  }
  return html_section("ensemble", "Ensemble", body);
}

std::string stages_section(const ReportData& data) {
  if (!data.run || data.run->stages.empty()) {
    return html_absent_section(
        "stages", "Stages: precision, quantization, speed and accuracy",
        data.run ? "osprey run has finished no stage yet (run.json has no stage row)."
                 : "No stage table here: no run.json (osprey run writes it).");
  }
  const RunInfo& run = *data.run;
  std::vector<std::vector<std::string>> rows;
  BarChart accuracy{.title = "test accuracy by stage", .value_label = "test accuracy (%)"};
  BarChart speed{.title = "inference speed by stage", .value_label = "samples/s (batch 256)"};
  for (const StageInfo& s : run.stages) {
    rows.push_back({s.stage, s.what, s.precision.empty() ? "-" : s.precision,
                    percent(s.test_accuracy), fmt::format("{:.0f}", s.samples_per_second),
                    fmt::format("{:.2f}", static_cast<double>(s.size_bytes) / 1e6),
                    fmt::format("{:.1f}", s.seconds)});
    accuracy.labels.push_back(s.stage);
    accuracy.values.push_back(100 * s.test_accuracy);
    speed.labels.push_back(s.stage);
    speed.values.push_back(s.samples_per_second);
  }
  std::string body =
      fmt::format("<p class=\"meta\">Each stage measured on the test split; {} spent in all.</p>\n",
                  escape(fmt::format("{:.0f} s", run.elapsed_seconds)));
  body += html_table(
      {"stage", "what", "precision", "test accuracy", "inference samples/s", "size MB", "seconds"},
      rows);
  body += bar_chart(accuracy) + bar_chart(speed);
  return html_section("stages", "Stages: precision, quantization, speed and accuracy", body);
}

}  // namespace detail

std::string render_report(const ReportData& data) {
  std::string body = "<h1>osprey report</h1>\n";
  body += fmt::format("<p class=\"meta\">{} &middot; osprey {}</p>\n",
                      escape(fs::absolute(data.dir).lexically_normal().string()), kVersion);
  if (data.run) {
    std::string options;
    for (const auto& [k, v] : data.run->options)
      options += fmt::format("{}{}={}", options.empty() ? "" : ", ", k, v);
    body += fmt::format("<p class=\"meta\">osprey run with {}</p>\n", escape(options));
  }
  body +=
      "<nav><a href=\"#curves\">Training curves</a><a href=\"#trials\">Tuner trials</a>"
      "<a href=\"#ensemble\">Ensemble</a><a href=\"#stages\">Stages</a></nav>\n";
  body += detail::curves_section(data);
  body += detail::trials_section(data);
  body += detail::ensemble_section(data);
  body += detail::stages_section(data);
  return html_document("osprey report: " + data.dir.filename().string(), body);
}

fs::path write_report(const fs::path& dir, const fs::path& output) {
  const ReportData data = read_report_data(dir);
  fs::path file = output.empty() ? dir / "report.html" : output;
  io::atomic_write_file(file, render_report(data));
  return file;
}

}  // namespace osprey::cli::report
