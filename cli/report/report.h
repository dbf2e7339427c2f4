// `osprey report DIR`: one self-contained HTML page (inline SVG plots, no script, nothing fetched)
// of what DIR holds (report_data.h): training curves per epoch, the tuner's trials (objective by
// trial with the best so far, parallel coordinates of the hyperparameters, a table), the
// ensemble's members and weights, and osprey run's table of stages (test accuracy, inference
// samples/s, size, seconds, the precision each ran in). A section without data is kept as a
// one-line note, so the page always has the same four sections (ids curves, trials, ensemble,
// stages), each of whose plots is an <svg class="plot">.
//   fs::path page = report::write_report("osprey_run");   // osprey_run/report.html
#pragma once

#include <filesystem>
#include <string>

#include "cli/report/report_data.h"

namespace osprey::cli::report {

std::string render_report(const ReportData& data);

// Reads dir and writes its page to output (dir/report.html when empty), atomically; returns
// where it went. UsageError when dir is missing or holds nothing to report.
std::filesystem::path write_report(const std::filesystem::path& dir,
                                   const std::filesystem::path& output = {});

namespace detail {
// The sections, each a <section> element (report_sections.cpp).
std::string curves_section(const ReportData& data);
std::string trials_section(const ReportData& data);
std::string ensemble_section(const ReportData& data);
std::string stages_section(const ReportData& data);
}  // namespace detail

}  // namespace osprey::cli::report
