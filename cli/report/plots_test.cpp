// The SVG builders of osprey report: escaping, axis ranges (one point, constant values, NaN, log),
// where points and bars land (by hand: the plot frame and the axis range fix every pixel), and
// parallel coordinates over numeric, log and categorical hyperparameters.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <regex>
#include <string>

#include "cli/report/bar_chart.h"
#include "cli/report/html.h"
#include "cli/report/line_plot.h"
#include "cli/report/parallel_coordinates.h"
#include "cli/report/svg.h"

namespace osprey::cli::report {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

std::vector<double> numbers_after(const std::string& text, const std::string& attribute) {
  std::vector<double> out;
  const std::regex re(attribute + "=\"([-0-9.e]+)\"");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator();
       ++it)
    out.push_back(std::stod((*it)[1]));
  return out;
}

TEST(EscapeTest, MarkupQuotesAndAmpersandsBecomeEntities) {
  EXPECT_EQ(escape("<a href=\"x\">Tom & 'Jerry'</a>"),
            "&lt;a href=&quot;x&quot;&gt;Tom &amp; &#39;Jerry&#39;&lt;/a&gt;");
  EXPECT_EQ(escape("plain_text 1.5"), "plain_text 1.5");
}

TEST(EscapeTest, ControlCharactersBecomeReplacementCharacters) {
  EXPECT_EQ(escape(std::string("a\x01"
                               "b\tc\n",
                               6)),
            "a\xEF\xBF\xBD"
            "b\tc\n");
}

TEST(FormatNumberTest, FourSignificantDigitsAndNamedSpecials) {
  EXPECT_EQ(format_number(0.30000000000000004), "0.3");
  EXPECT_EQ(format_number(12), "12");
  EXPECT_EQ(format_number(0.00123456), "0.001235");
  EXPECT_EQ(format_number(-0.0), "0");
  EXPECT_EQ(format_number(kNaN), "nan");
  EXPECT_EQ(format_number(-kInf), "-inf");
  EXPECT_EQ(px(12.04), "12");
  EXPECT_EQ(px(-0.01), "0");
}

TEST(AxisTest, SpreadValuesGetNiceTicksCoveringThem) {
  const Axis a = Axis::fit({0.31, 0.52, 0.77});  // step nice(0.46 / 5) = 0.1
  EXPECT_DOUBLE_EQ(a.lo(), 0.3);
  EXPECT_DOUBLE_EQ(a.hi(), 0.8);
  ASSERT_EQ(a.ticks().size(), 6u);
  EXPECT_DOUBLE_EQ(a.ticks()[2], 0.5);
}

TEST(AxisTest, OnePointLiesInTheMiddleOfARangeAroundIt) {
  const Axis a = Axis::fit({5});  // padded by 10%: [4.5, 5.5], step 0.2 -> [4.4, 5.6]
  EXPECT_DOUBLE_EQ(a.lo(), 4.4);
  EXPECT_DOUBLE_EQ(a.hi(), 5.6);
  EXPECT_NEAR(a.to_pixel(5, 0, 100), 50, 1e-9);
}

TEST(AxisTest, ConstantValuesAndZeroGetARangeAroundThem) {
  const Axis c = Axis::fit({2, 2, 2});
  EXPECT_LT(c.lo(), 2);
  EXPECT_GT(c.hi(), 2);
  const Axis z = Axis::fit({0, 0});  // [-1, 1], step 0.5
  EXPECT_EQ(z.ticks(), (std::vector<double>{-1, -0.5, 0, 0.5, 1}));
}

TEST(AxisTest, NaNAndInfinitiesAreSkipped) {
  const Axis a = Axis::fit({kNaN, 1, 3, kInf, -kInf});
  EXPECT_DOUBLE_EQ(a.lo(), 1);
  EXPECT_DOUBLE_EQ(a.hi(), 3);
  EXPECT_FALSE(a.placeable(kNaN));
  const Axis none = Axis::fit({kNaN, kNaN});
  EXPECT_DOUBLE_EQ(none.lo(), 0);
  EXPECT_DOUBLE_EQ(none.hi(), 1);
}

TEST(AxisTest, LogAxisPlacesDecadesEvenlyAndSkipsValuesThatAreNotPositive) {
  const Axis a = Axis::fit({1e-4, 1e-2, 0, -3}, {.log = true});
  EXPECT_EQ(a.ticks(), (std::vector<double>{1e-4, 1e-3, 1e-2}));  // 1, 2, 5 would be 7 ticks
  EXPECT_NEAR(a.to_pixel(1e-3, 0, 100), 50, 1e-9);
  EXPECT_FALSE(a.placeable(0));
  const Axis one = Axis::fit({10}, {.log = true});  // half a decade either side
  EXPECT_NEAR(one.to_pixel(10, 0, 100), 50, 1e-9);
}

TEST(AxisTest, IntegerAxesTickOnWholeNumbers) {
  EXPECT_EQ(Axis::fit({1, 2}, {.integer = true}).ticks(), (std::vector<double>{1, 2}));
  EXPECT_EQ(Axis::fit({1}, {.integer = true}).ticks(), (std::vector<double>{0, 1, 2}));
}

TEST(LinePlotTest, PointsLandWhereTheFrameAndAxesPutThem) {
  // Frame of a 560x320 plot: x in [64, 544], y in [276, 40]; axes [0, 1] both.
  const std::string svg =
      line_plot({.title = "t", .series = {{.name = "s", .x = {0, 1}, .y = {0, 1}}}});
  EXPECT_NE(svg.find("<circle cx=\"64\" cy=\"276\""), std::string::npos) << svg;
  EXPECT_NE(svg.find("<circle cx=\"544\" cy=\"40\""), std::string::npos) << svg;
  EXPECT_NE(svg.find("d=\"M64 276 L544 40\""), std::string::npos) << svg;
  EXPECT_EQ(count(svg, "<svg class=\"plot\""), 1);
  EXPECT_EQ(count(svg, "</svg>"), 1);
}

TEST(LinePlotTest, NaNPointsAreSkippedAndBreakTheLine) {
  const std::string svg =
      line_plot({.title = "t", .series = {{.name = "s", .x = {1, 2, 3, 4}, .y = {1, kNaN, 3, 4}}}});
  EXPECT_EQ(count(svg, "<circle"), 3);
  const std::smatch m = [&] {
    std::smatch r;
    std::regex_search(svg, r, std::regex("class=\"series\" d=\"([^\"]*)\""));
    return r;
  }();
  ASSERT_FALSE(m.empty());
  EXPECT_EQ(count(m[1], "M"), 2) << m[1];
  EXPECT_EQ(svg.find("nan\""), std::string::npos);  // no coordinate is NaN
}

TEST(LinePlotTest, ASeriesOfOnlyNaNDrawsNothingButThePlot) {
  const std::string svg =
      line_plot({.title = "t", .series = {{.name = "s", .x = {1, 2}, .y = {kNaN, kNaN}}}});
  EXPECT_EQ(count(svg, "<circle"), 0);
  EXPECT_EQ(count(svg, "class=\"series\""), 0);
  EXPECT_EQ(count(svg, "</svg>"), 1);
}

TEST(LinePlotTest, NamesAndTitlesAreEscaped) {
  const std::string svg = line_plot(
      {.title = "a<b>", .series = {{.name = "<script>alert(1)</script>", .x = {1}, .y = {1}}}});
  EXPECT_EQ(svg.find("<script>"), std::string::npos);
  EXPECT_EQ(svg.find("<b>"), std::string::npos);
  EXPECT_NE(svg.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(svg.find("aria-label=\"a&lt;b&gt;\""), std::string::npos);
}

TEST(LinePlotTest, StepSeriesGoAcrossThenUp) {
  const std::string svg = line_plot(
      {.title = "t", .series = {{.name = "best", .x = {0, 1}, .y = {0, 1}, .step = true}}});
  EXPECT_NE(svg.find("d=\"M64 276 L544 276 L544 40\""), std::string::npos) << svg;
}

TEST(BarChartTest, BarsStartAtZeroAndAreProportionalToTheValues) {
  const std::string svg = bar_chart({.title = "w", .labels = {"a", "b"}, .values = {0.25, 0.75}});
  const std::vector<double> widths =
      numbers_after(svg, "<rect class=\"bar\" x=\"[-0-9.]+\" y=\"[-0-9.]+\" width");
  ASSERT_EQ(widths.size(), 2u);
  EXPECT_NEAR(widths[1] / widths[0], 3.0, 0.01);
  const std::vector<double> xs = numbers_after(svg, "<rect class=\"bar\" x");
  EXPECT_EQ(xs[0], xs[1]);  // both from zero
}

TEST(BarChartTest, ANaNValueHasNoBarButItsValueIsPrinted) {
  const std::string svg = bar_chart({.title = "w", .labels = {"a", "b"}, .values = {kNaN, 2}});
  EXPECT_EQ(count(svg, "<rect class=\"bar\""), 1);
  EXPECT_NE(svg.find(">nan</text>"), std::string::npos);
}

TEST(ParallelCoordinatesTest, NumericLogAndCategoricalAxesPlaceEachTrial) {
  ParallelCoordinates pc{.title = "trials"};
  pc.dimensions = {{.name = "units"},
                   {.name = "learning_rate", .log = true},
                   {.name = "optimizer", .categories = {"adam", "rmsprop", "sgd"}},
                   {.name = "filters", .categories = {"16", "32"}}};  // a Choice of numbers
  pc.rows = {{64.0, 1e-4, std::string("sgd"), 16.0},
             {128.0, 1e-3, std::string("adam"), 32.0},
             {192.0, 1e-2, std::string("rmsprop"), 32.0}};
  const auto pos = detail::parallel_positions(pc);
  // units: 64..192 on at most 5 ticks, step nice(128 / 4) = 50: the axis is [50, 200]
  EXPECT_NEAR(pos[0][0], (64 - 50) / 150.0, 1e-12);
  EXPECT_NEAR(pos[2][0], (192 - 50) / 150.0, 1e-12);
  EXPECT_NEAR(pos[1][1], 0.5, 1e-12);  // the middle decade of three
  EXPECT_LT(pos[0][1], pos[1][1]);
  EXPECT_DOUBLE_EQ(pos[0][2], 1.0);  // sgd, the last of three categories
  EXPECT_DOUBLE_EQ(pos[1][2], 0.0);
  EXPECT_DOUBLE_EQ(pos[2][2], 0.5);
  EXPECT_DOUBLE_EQ(pos[0][3], 0.0);
  EXPECT_DOUBLE_EQ(pos[1][3], 1.0);
  EXPECT_EQ(count(parallel_coordinates(pc), "class=\"pc-line\""), 3);
}

TEST(ParallelCoordinatesTest, CategoriesMetButNotListedAreAppendedInOrder) {
  ParallelCoordinates pc{.title = "t",
                         .dimensions = {{.name = "c", .categories = {"a"}}, {.name = "b"}}};
  pc.rows = {{std::string("z"), std::string("true")}, {std::string("a"), std::string("false")}};
  EXPECT_EQ(detail::parallel_categories(pc, 0), (std::vector<std::string>{"a", "z"}));
  EXPECT_EQ(detail::parallel_categories(pc, 1), (std::vector<std::string>{"true", "false"}));
  const ParallelCoordinates numeric{.title = "n", .dimensions = {{.name = "x"}}, .rows = {{1.0}}};
  EXPECT_TRUE(detail::parallel_categories(numeric, 0).empty());
}

TEST(ParallelCoordinatesTest, AnAbsentValueBreaksTheLine) {
  ParallelCoordinates pc{.title = "t", .dimensions = {{.name = "a"}, {.name = "b"}, {.name = "c"}}};
  pc.rows = {{1.0, Cell{}, 3.0}, {2.0, 2.0, kNaN}};
  const auto pos = detail::parallel_positions(pc);
  EXPECT_TRUE(std::isnan(pos[0][1]));
  EXPECT_TRUE(std::isnan(pos[1][2]));  // NaN cannot be placed either
  const std::string svg = parallel_coordinates(pc);
  EXPECT_NE(svg.find("d=\"M70 "), std::string::npos);
  std::smatch m;
  std::regex_search(svg, m, std::regex("class=\"pc-line\" d=\"([^\"]*)\"[^>]*><title>row 0"));
  ASSERT_FALSE(m.empty()) << svg;
  EXPECT_EQ(count(m[1], "M"), 2) << m[1];
}

TEST(ParallelCoordinatesTest, TheBestTrialIsDrawnLastAndYellow) {
  ParallelCoordinates pc{.title = "t", .dimensions = {{.name = "x"}}};
  pc.rows = {{1.0}, {2.0}, {3.0}};
  pc.row_names = {"first", "second", "third"};
  pc.colour_by = {0.9, 0.1, 0.5};
  const auto last_title = [](const std::string& svg) {
    const size_t at = svg.rfind("class=\"pc-line\"");
    const size_t t = svg.find("<title>", at) + 7;
    return svg.substr(t, svg.find("</title>", t) - t);
  };
  std::string svg = parallel_coordinates(pc);
  EXPECT_EQ(last_title(svg), "first");
  EXPECT_NE(svg.find("stroke=\"#fde725\""), std::string::npos);  // the ramp's yellow end
  pc.higher_is_better = false;                                   // a loss: the lowest is best
  EXPECT_EQ(last_title(parallel_coordinates(pc)), "second");
}

TEST(RampColourTest, EndsAreViridisAndNaNIsGrey) {
  EXPECT_EQ(ramp_colour(0), "#440154");
  EXPECT_EQ(ramp_colour(1), "#fde725");
  EXPECT_EQ(ramp_colour(kNaN), "#999999");
}

TEST(HtmlTest, TableCellsAreEscapedAndNumbersAlignedRight) {
  const std::string t = html_table({"a<b"}, {{"x & y"}, {"12.5%"}});
  EXPECT_NE(t.find("<th>a&lt;b</th>"), std::string::npos);
  EXPECT_NE(t.find("<td>x &amp; y</td>"), std::string::npos);
  EXPECT_NE(t.find("<td class=\"num\">12.5%</td>"), std::string::npos);
}

TEST(HtmlTest, TheDocumentForbidsFetchingAnythingAndRunsNoScript) {
  const std::string page = html_document("t<1>", "<p>x</p>");
  EXPECT_NE(page.find("Content-Security-Policy\" content=\"default-src 'none'"), std::string::npos);
  EXPECT_NE(page.find("<title>t&lt;1&gt;</title>"), std::string::npos);
  EXPECT_EQ(page.find("<script"), std::string::npos);
  EXPECT_EQ(page.find("http://"), std::string::npos);
  EXPECT_EQ(page.find("https://"), std::string::npos);
}

}  // namespace
}  // namespace osprey::cli::report
