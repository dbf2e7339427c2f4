#include "cli/report/html.h"

#include <fmt/format.h>

#include <cstdlib>

#include "cli/report/svg.h"

namespace osprey::cli::report {

namespace {

bool numeric(const std::string& cell) {
  if (cell.empty()) return false;
  const std::string s = cell.back() == '%' ? cell.substr(0, cell.size() - 1) : cell;
  char* end = nullptr;
  std::strtod(s.c_str(), &end);
  return !s.empty() && end == s.c_str() + s.size();
}

constexpr const char* kStyle = R"(
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 24px auto;
       max-width: 1240px; padding: 0 16px; color: #222; background: #fafafa; }
h1 { font-size: 22px; margin-bottom: 4px; }
h2 { font-size: 18px; margin-top: 32px; border-bottom: 1px solid #ddd; padding-bottom: 4px; }
h3 { font-size: 15px; margin: 18px 0 6px; }
p.meta, p.note { color: #555; font-size: 13px; }
nav a { margin-right: 14px; font-size: 14px; }
svg.plot { background: #fff; border: 1px solid #ddd; margin: 6px 10px 6px 0; max-width: 100%;
           height: auto; vertical-align: top; font-family: inherit; }
svg .grid { stroke: #eee; }
svg .frame { fill: none; stroke: #999; }
svg .axis { stroke: #888; }
svg .tick { font-size: 11px; fill: #444; }
svg .label { font-size: 12px; fill: #222; }
svg .title { font-size: 13px; font-weight: 600; fill: #222; }
svg .legend { font-size: 12px; fill: #222; }
svg .halo { paint-order: stroke; stroke: #fff; stroke-width: 3px; }
table { border-collapse: collapse; font-size: 13px; margin: 8px 0 16px; background: #fff; }
th, td { border: 1px solid #ddd; padding: 3px 8px; text-align: left; }
th { background: #f0f0f0; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
)";

}  // namespace

std::string html_table(const std::vector<std::string>& header,
                       const std::vector<std::vector<std::string>>& rows) {
  std::string s = "<table>\n<tr>";
  for (const std::string& h : header) s += "<th>" + escape(h) + "</th>";
  s += "</tr>\n";
  for (const auto& row : rows) {
    s += "<tr>";
    for (const std::string& cell : row)
      s += fmt::format("<td{}>{}</td>", numeric(cell) ? " class=\"num\"" : "", escape(cell));
    s += "</tr>\n";
  }
  return s + "</table>\n";
}

std::string html_section(std::string_view id, std::string_view title, std::string_view body) {
  return fmt::format("<section id=\"{}\">\n<h2>{}</h2>\n{}</section>\n", escape(id), escape(title),
                     body);
}

std::string html_absent_section(std::string_view id, std::string_view title,
                                std::string_view note) {
  return fmt::format(
      "<section id=\"{}\" class=\"absent\">\n<h2>{}</h2>\n<p class=\"note\">{}</p>\n</section>\n",
      escape(id), escape(title), escape(note));
}

std::string html_document(std::string_view title, std::string_view body) {
  // default-src 'none': nothing may be fetched, inline styles excepted; no script runs.
  return fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src "
      "'unsafe-inline'\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      "<title>{}</title>\n<style>{}</style>\n</head>\n<body>\n{}</body>\n</html>\n",
      escape(title), kStyle, body);
}

}  // namespace osprey::cli::report
