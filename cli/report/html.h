// The page around the plots of `osprey report`: one self-contained HTML document (inline CSS, no
// script, no fetched resource; its Content-Security-Policy forbids loading anything, so a page
// that tried would show the attempt as a console error) and tables whose cells are escaped.
//   std::string page = html_document("osprey report: run", body);
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace osprey::cli::report {

// A <table>: the header and rows as text (escaped here); cells that read as numbers are aligned
// right.
std::string html_table(const std::vector<std::string>& header,
                       const std::vector<std::vector<std::string>>& rows);

// A <section> with its id, an <h2> title (escaped) and a body (HTML, as is).
std::string html_section(std::string_view id, std::string_view title, std::string_view body);
// The section of what is absent: the title and a one-line note (escaped) saying why.
std::string html_absent_section(std::string_view id, std::string_view title, std::string_view note);

// <!DOCTYPE html> ... with the title (escaped) and the body (HTML, inserted as is).
std::string html_document(std::string_view title, std::string_view body);

}  // namespace osprey::cli::report
