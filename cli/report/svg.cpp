#include "cli/report/svg.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>

namespace osprey::cli::report {

std::string escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        if ((static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n') || c == 0x7f) {
          out += "\xEF\xBF\xBD";  // U+FFFD
        } else {
          out += c;
        }
    }
  }
  return out;
}

std::string format_number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (v == 0) return "0";  // -0 too
  return fmt::format("{:.4g}", v);
}

std::string px(double v) {
  std::string s = fmt::format("{:.1f}", v);
  if (s.ends_with(".0")) s.resize(s.size() - 2);
  return s == "-0" ? "0" : s;
}

namespace {

// 1, 2 or 5 times a power of ten, the smallest at least `raw`.
double nice_step(double raw) {
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  const double f = raw / power;
  return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * power;
}

}  // namespace

Axis Axis::fit(const std::vector<double>& values, AxisOptions options) {
  const bool log = options.log;
  const int max_ticks = std::max(options.max_ticks, 2);
  Axis a;
  a.log_ = log;
  std::vector<double> used;
  for (const double v : values)
    if (a.placeable(v)) used.push_back(v);
  if (log) {
    // In decades: the values' span, half a decade either side of a constant, 1..10 when empty.
    double l = 0, h = 1;
    if (!used.empty()) {
      l = std::log10(*std::min_element(used.begin(), used.end()));
      h = std::log10(*std::max_element(used.begin(), used.end()));
      const double pad = h == l ? 0.5 : (h - l) * 0.05;
      l -= pad, h += pad;
    }
    a.lo_ = std::pow(10.0, l), a.hi_ = std::pow(10.0, h);
    // Ticks at 1, 2 and 5 times the powers of ten inside, only the powers when those are many.
    for (const std::vector<double>& mantissas : {std::vector<double>{1, 2, 5}, {1}}) {
      a.ticks_.clear();
      for (int k = static_cast<int>(std::floor(l)); k <= static_cast<int>(std::ceil(h)); ++k) {
        for (const double m : mantissas) {
          const double t = m * std::pow(10.0, k);
          if (t >= a.lo_ * (1 - 1e-9) && t <= a.hi_ * (1 + 1e-9)) a.ticks_.push_back(t);
        }
      }
      if (std::ssize(a.ticks_) <= max_ticks) break;
    }
    if (a.ticks_.size() < 2) a.ticks_ = {a.lo_, a.hi_};
    return a;
  }
  double lo = 0, hi = 1;
  if (!used.empty()) {
    lo = *std::min_element(used.begin(), used.end());
    hi = *std::max_element(used.begin(), used.end());
  }
  if (hi == lo) {
    const double pad = lo == 0 ? 1 : std::abs(lo) * 0.1;
    lo -= pad, hi += pad;
  }
  double step = nice_step((hi - lo) / (max_ticks - 1));
  if (options.integer) step = std::max(step, 1.0);
  const auto first = static_cast<int64_t>(std::floor(lo / step + 1e-9));
  const auto last = static_cast<int64_t>(std::ceil(hi / step - 1e-9));
  a.lo_ = static_cast<double>(first) * step;
  a.hi_ = static_cast<double>(last) * step;
  for (int64_t k = first; k <= last; ++k) a.ticks_.push_back(static_cast<double>(k) * step);
  return a;
}

bool Axis::placeable(double v) const { return std::isfinite(v) && (!log_ || v > 0); }

double Axis::to_pixel(double v, double from, double to) const {
  const auto f = [&](double x) { return log_ ? std::log10(x) : x; };
  const double t = (f(v) - f(lo_)) / (f(hi_) - f(lo_));
  return from + t * (to - from);
}

const char* series_colour(size_t i) {
  static constexpr std::array<const char*, 10> kColours = {
      "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
      "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
  return kColours[i % kColours.size()];
}

std::string ramp_colour(double t) {
  if (std::isnan(t)) return "#999999";
  // Five stops of viridis, interpolated in RGB.
  static constexpr std::array<std::array<int, 3>, 5> kStops = {
      {{68, 1, 84}, {59, 82, 139}, {33, 145, 140}, {94, 201, 98}, {253, 231, 37}}};
  t = std::clamp(t, 0.0, 1.0) * (kStops.size() - 1);
  const size_t i = std::min(static_cast<size_t>(t), kStops.size() - 2);
  const double f = t - static_cast<double>(i);
  std::array<int, 3> c{};
  for (size_t k = 0; k < 3; ++k)
    c[k] = static_cast<int>(std::lround(kStops[i][k] + f * (kStops[i + 1][k] - kStops[i][k])));
  return fmt::format("#{:02x}{:02x}{:02x}", c[0], c[1], c[2]);
}

std::string svg_open(int width, int height, std::string_view title) {
  const std::string t = escape(title);
  return fmt::format(
      "<svg class=\"plot\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" role=\"img\" aria-label=\"{2}\"><title>{2}</title>\n",
      width, height, t);
}

std::string svg_close() { return "</svg>\n"; }

std::string svg_text(double x, double y, std::string_view text, std::string_view anchor,
                     std::string_view extra) {
  return fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"{}\"{}{}>{}</text>\n", px(x), px(y),
                     anchor, extra.empty() ? "" : " ", extra, escape(text));
}

}  // namespace osprey::cli::report
