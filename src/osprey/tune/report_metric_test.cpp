// The metric report format (report_metric.h): parse_metric_line and parse_metric_json on good
// reports, hypertune's, and the exact message for each malformed one; and report_metric's own
// lines read back as the values it was given.
#include "osprey/tune/report_metric.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>

#include "osprey/core/error.h"
#include "osprey/core/error_of_test.h"

namespace osprey::tune {
namespace {

using osprey::testing::error_of;

std::string line_error(const std::string& line) {
  return error_of<ValueError>([&] { parse_metric_line(line); });
}

std::string json_error(const std::string& line) {
  return error_of<ValueError>([&] { parse_metric_json(line); });
}

TEST(ParseMetricLineTest, ReadsOneValueAndItsEpochCountedFromOneAsOspreyStoresItFromZero) {
  const auto r = parse_metric_line("osprey-metric loss=0.41 epoch=2");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->metrics, (MetricValues{{"loss", 0.41}}));
  EXPECT_EQ(r->epoch, 1);  // the second epoch: "Epoch 2/3" in a progress bar, 1 in on_epoch_end
  EXPECT_EQ(parse_metric_line("osprey-metric loss=1 epoch=1")->epoch, 0);
}

TEST(ParseMetricLineTest, TheConversionIsOneStepEachWay) {
  EXPECT_EQ(reported_epoch(0), 1);
  EXPECT_EQ(stored_epoch(1), 0);
  for (int e : {0, 1, 7}) EXPECT_EQ(stored_epoch(reported_epoch(e)), e);
}

TEST(ParseMetricLineTest, KeepsSeveralValuesInTheOrderGivenWhereverTheEpochIs) {
  const auto r = parse_metric_line("  osprey-metric\tval_loss=1.5e-3 epoch=1 accuracy=0.875\r\n");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->metrics, (MetricValues{{"val_loss", 1.5e-3}, {"accuracy", 0.875}}));
  EXPECT_EQ(r->epoch, 0);
}

TEST(ParseMetricLineTest, AReportWithoutAnEpochLeavesItToTheReader) {
  const auto r = parse_metric_line("osprey-metric loss=3");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->metrics, (MetricValues{{"loss", 3.0}}));
  EXPECT_FALSE(r->epoch.has_value());
}

TEST(ParseMetricLineTest, ReadsNanAndInfinitiesAsStrtodDoes) {
  const auto r = parse_metric_line("osprey-metric a=nan b=inf c=-inf d=NAN e=Infinity epoch=1");
  ASSERT_TRUE(r.has_value());
  ASSERT_EQ(r->metrics.size(), 5u);
  EXPECT_TRUE(std::isnan(r->metrics[0].second));
  EXPECT_EQ(r->metrics[1].second, std::numeric_limits<double>::infinity());
  EXPECT_EQ(r->metrics[2].second, -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(r->metrics[3].second));
  EXPECT_EQ(r->metrics[4].second, std::numeric_limits<double>::infinity());
}

TEST(ParseMetricLineTest, ALineThatDoesNotStartWithTheWordIsNotAReport) {
  EXPECT_FALSE(parse_metric_line("").has_value());
  EXPECT_FALSE(parse_metric_line("training x=3 y=0.5").has_value());
  EXPECT_FALSE(parse_metric_line("osprey-metrics loss=1").has_value());
  EXPECT_FALSE(parse_metric_line("note: osprey-metric loss=1").has_value());
}

TEST(ParseMetricLineTest, AMalformedReportIsAValueErrorQuotingTheLine) {
  EXPECT_EQ(line_error("osprey-metric"),
            "metric report: expected 'osprey-metric NAME=VALUE [epoch=E]'. Received: "
            "'osprey-metric'");
  EXPECT_EQ(line_error("osprey-metric epoch=3"),
            "metric report: expected 'osprey-metric NAME=VALUE [epoch=E]'. Received: "
            "'osprey-metric epoch=3'");
  EXPECT_EQ(line_error("osprey-metric loss"),
            "metric report: expected NAME=VALUE, received 'loss' in the line 'osprey-metric loss'");
  EXPECT_EQ(line_error("osprey-metric =1"),
            "metric report: expected NAME=VALUE, received '=1' in the line 'osprey-metric =1'");
  EXPECT_EQ(line_error("osprey-metric loss=abc"),
            "metric report: the value of loss must be a number. Received: 'abc' in the line "
            "'osprey-metric loss=abc'");
  EXPECT_EQ(line_error("osprey-metric loss="),
            "metric report: the value of loss must be a number. Received: '' in the line "
            "'osprey-metric loss='");
  EXPECT_EQ(line_error("osprey-metric loss=0.5x"),
            "metric report: the value of loss must be a number. Received: '0.5x' in the line "
            "'osprey-metric loss=0.5x'");
  EXPECT_EQ(line_error("osprey-metric loss=1 loss=2"),
            "metric report: loss given twice in the line 'osprey-metric loss=1 loss=2'");
  EXPECT_EQ(line_error("osprey-metric loss=1 epoch=1 epoch=2"),
            "metric report: epoch given twice in the line 'osprey-metric loss=1 epoch=1 epoch=2'");
  // epoch=0 is what a program counting from 0 prints first: refused, not shifted silently.
  for (const char* bad : {"0", "1.5", "-1", "x", "nan", "inf", ""}) {
    const std::string line = fmt::format("osprey-metric loss=1 epoch={}", bad);
    EXPECT_EQ(line_error(line),
              fmt::format("metric report: epoch must be an integer >= 1 (epochs count from 1: "
                          "the first is epoch=1). Received: '{}' in the line '{}'",
                          bad, line));
  }
}

TEST(ParseMetricJsonTest, ReadsValuesAndTheEpoch) {
  const MetricReport r = parse_metric_json(R"({"loss": 0.41, "epoch": 2})");
  EXPECT_EQ(r.metrics, (MetricValues{{"loss", 0.41}}));
  EXPECT_EQ(r.epoch, 1);  // counted from 1, as the stdout line's
}

TEST(ParseMetricJsonTest, ReadsSeveralValuesAndNoEpoch) {
  const MetricReport r = parse_metric_json(R"(  {"val_loss": 1, "accuracy": 0.875}  )");
  ASSERT_EQ(r.metrics.size(), 2u);
  const MetricValues want = {{"accuracy", 0.875}, {"val_loss", 1.0}};  // a JSON object's order
  EXPECT_EQ(r.metrics, want);
  EXPECT_FALSE(r.epoch.has_value());
}

// hypertune's global_step is the 0-based epoch a Keras callback passes it, read as it is.
TEST(ParseMetricJsonTest, ReadsHypertunesStringValuesAndGlobalStepAndSkipsItsBookkeeping) {
  const MetricReport r = parse_metric_json(
      R"({"timestamp": 1712345678.25, "trial": "0", "loss": " 0.5 ", "global_step": "3", )"
      R"("checkpoint_path": ""})");
  EXPECT_EQ(r.metrics, (MetricValues{{"loss", 0.5}}));
  EXPECT_EQ(r.epoch, 3);
}

TEST(ParseMetricJsonTest, AnEpochWinsOverAGlobalStep) {
  EXPECT_EQ(parse_metric_json(R"({"loss": 1, "epoch": 2, "global_step": "7"})").epoch, 1);
  EXPECT_EQ(parse_metric_json(R"({"loss": 1, "epoch": "4"})").epoch, 3);
  EXPECT_EQ(parse_metric_json(R"({"loss": 1, "global_step": 5.0})").epoch, 5);
  EXPECT_EQ(parse_metric_json(R"({"loss": 1, "global_step": "0"})").epoch, 0);
}

TEST(ParseMetricJsonTest, ReadsNullPythonsNanAndInfinityAndNumericStrings) {
  const MetricReport r = parse_metric_json(
      R"({"a": null, "b": NaN, "c": Infinity, "d": -Infinity, "e": "nan", "f": "-inf", )"
      R"("NaN_count": 2})");
  ASSERT_EQ(r.metrics.size(), 7u);  // in key order: NaN_count, a, b, c, d, e, f
  EXPECT_EQ(r.metrics[0], (std::pair<std::string, double>{"NaN_count", 2.0}));
  EXPECT_TRUE(std::isnan(r.metrics[1].second));
  EXPECT_TRUE(std::isnan(r.metrics[2].second));
  EXPECT_EQ(r.metrics[3].second, std::numeric_limits<double>::infinity());
  EXPECT_EQ(r.metrics[4].second, -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(r.metrics[5].second));
  EXPECT_EQ(r.metrics[6].second, -std::numeric_limits<double>::infinity());
}

TEST(ParseMetricJsonTest, AMalformedLineIsAValueErrorQuotingTheLine) {
  std::string parse_error = "parsed";  // nlohmann's own message, whatever its version
  try {
    parse_error = nlohmann::json::parse("loss=1").dump();
  } catch (const nlohmann::json::exception& e) {
    parse_error = e.what();
  }
  EXPECT_EQ(json_error("loss=1"), "metric file: the line 'loss=1' is not JSON: " + parse_error);
  EXPECT_EQ(json_error("[1, 2]"),
            "metric file: expected a JSON object per line. Received: '[1, 2]'");
  EXPECT_EQ(json_error(R"("loss")"),
            R"(metric file: expected a JSON object per line. Received: '"loss"')");
  EXPECT_EQ(json_error("{}"), "metric file: no metric values in the line '{}'");
  EXPECT_EQ(json_error(R"({"epoch": 1, "trial": "0"})"),
            R"(metric file: no metric values in the line '{"epoch": 1, "trial": "0"}')");
  EXPECT_EQ(json_error(R"({"loss": "abc"})"),
            R"(metric file: the value of "loss" must be a number. Received: "abc" in the line )"
            R"('{"loss": "abc"}')");
  EXPECT_EQ(json_error(R"({"loss": true})"),
            R"(metric file: the value of "loss" must be a number. Received: true in the line )"
            R"('{"loss": true}')");
  EXPECT_EQ(json_error(R"({"loss": [1]})"),
            R"(metric file: the value of "loss" must be a number. Received: [1] in the line )"
            R"('{"loss": [1]}')");
  for (const char* bad : {"0", "-1", "1.5"}) {
    const std::string line = fmt::format(R"({{"loss": 1, "epoch": {}}})", bad);
    EXPECT_EQ(json_error(line),
              fmt::format(R"(metric file: "epoch" must be an integer >= 1 (epochs count from 1: )"
                          R"(the first is "epoch": 1). Received: {} in the line '{}')",
                          bad, line));
  }
  EXPECT_EQ(json_error(R"({"loss": 1, "global_step": "x"})"),
            R"(metric file: "global_step" must be an integer >= 0. Received: "x" in the line )"
            R"('{"loss": 1, "global_step": "x"}')");
}

// report_metric writes what the parsers read: the same doubles, NaN and infinities included.
TEST(ReportMetricTest, ItsStdoutLineReadsBackAsTheValuesReported) {
  ASSERT_EQ(unsetenv("OSPREY_METRIC_FILE"), 0);
  ::testing::internal::CaptureStdout();
  report_metrics({{"loss", 1.0 / 3}, {"acc", std::numeric_limits<double>::infinity()}}, 4);
  const std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(out, "osprey-metric loss=0.33333333333333331 acc=inf epoch=5\n");  // 0-based 4
  const auto r = parse_metric_line(out);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->metrics,
            (MetricValues{{"loss", 1.0 / 3}, {"acc", std::numeric_limits<double>::infinity()}}));
  EXPECT_EQ(r->epoch, 4);
}

TEST(ReportMetricTest, ItsMetricFileLinesReadBackAsTheValuesReported) {
  const std::filesystem::path file =
      std::filesystem::temp_directory_path() /
      ("osprey_report_metric_test_" + std::to_string(getpid()) + ".jsonl");
  std::filesystem::remove(file);
  ASSERT_EQ(setenv("OSPREY_METRIC_FILE", file.c_str(), 1), 0);
  report_metric("loss", 0.1, 0);
  report_metric("loss", std::nan(""));
  unsetenv("OSPREY_METRIC_FILE");
  std::ifstream in(file);
  std::string first, second;
  std::getline(in, first);
  std::getline(in, second);
  std::filesystem::remove(file);
  EXPECT_EQ(first, R"({"loss": 0.10000000000000001, "epoch": 1})");
  const MetricReport a = parse_metric_json(first), b = parse_metric_json(second);
  EXPECT_EQ(a.metrics, (MetricValues{{"loss", 0.1}}));
  EXPECT_EQ(a.epoch, 0);
  ASSERT_EQ(b.metrics.size(), 1u);
  EXPECT_TRUE(std::isnan(b.metrics[0].second));
  EXPECT_FALSE(b.epoch.has_value());
}

TEST(ReportMetricTest, RefusesANameTheParsersWouldNotReadAsAMetric) {
  for (const char* key : kReportKeys) {
    EXPECT_EQ(error_of<ValueError>([&] { report_metric(key, 1.0); }),
              std::string("report_metric: '") + key +
                  "' is a key osprey reads itself, not a metric; name the metric otherwise");
  }
}

}  // namespace
}  // namespace osprey::tune
