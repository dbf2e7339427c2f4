// What osprey report reads and the page it writes: history.json and CSV logs, a tuner's folder
// (Hyperband's promoted trials continue their parents' curves), osprey run's state, the errors
// for a missing, empty or damaged folder, and the sections of the page with their plots.
#include "cli/report/report.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/usage_error.h"
#include "osprey/core/error.h"
#include "osprey/io/json.h"
#include "osprey/io/temporary_directory.h"

namespace osprey::cli::report {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

void write_text(const fs::path& file, const std::string& text) {
  fs::create_directories(file.parent_path());
  std::ofstream(file) << text;
}
void write(const fs::path& file, const json& j) { write_text(file, j.dump(2)); }

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// The <svg> plots inside <section id="id">, or -1 when the page has no such section.
int plots_in(const std::string& page, const std::string& id) {
  const size_t start = page.find("<section id=\"" + id + "\"");
  if (start == std::string::npos) return -1;
  return count(page.substr(start, page.find("</section>", start) - start), "<svg class=\"plot\"");
}

json epoch(int e, const json& metrics) { return {{"epoch", e}, {"metrics", metrics}}; }

json trial(const std::string& id, const std::string& status, const json& score, const json& values,
           const json& records, const std::string& message = "") {
  return {{"trial_id", id},
          {"status", status},
          {"score", score},
          {"best_step", records.empty() ? -1 : 0},
          {"hyperparameters", {{"space", json::array()}, {"values", values}}},
          {"metrics", json::object()},
          {"executions", records.empty() ? json::array() : json::array({records})},
          {"message", message}};
}

// A Hyperband study of three trials: 0000 (2 epochs), 0001 failed, 0002 promoted from 0000 (its
// epochs 3 and 4, a NaN val_loss among them) and the best.
void write_study(const fs::path& dir) {
  const json space = {
      {{"class_name", "Float"},
       {"config",
        {{"name", "learning_rate"},
         {"min_value", 1e-4},
         {"max_value", 1e-2},
         {"sampling", "log"}}}},
      {{"class_name", "Choice"}, {"config", {{"name", "optimizer"}, {"values", {"adam", "sgd"}}}}},
      {{"class_name", "Boolean"}, {"config", {{"name", "batch_norm"}}}},
      {{"class_name", "Fixed"}, {"config", {{"name", "head"}, {"value", "flatten"}}}}};
  write(dir / "oracle.json", {{"class_name", "Hyperband"},
                              {"objective", {{"name", "val_accuracy"}, {"direction", "max"}}},
                              {"hyperparameters", {{"space", space}, {"values", json::object()}}},
                              {"trial_ids", {"0000", "0001", "0002"}}});
  write(
      dir / "trial_0000/trial.json",
      trial(
          "0000", "completed", 0.5,
          {{"learning_rate", 1e-3},
           {"optimizer", "adam"},
           {"batch_norm", true},
           {"tuner/epochs", 2}},
          {epoch(0, {{"loss", 1.0}, {"val_loss", 1.2}, {"accuracy", 0.4}, {"val_accuracy", 0.45}}),
           epoch(1,
                 {{"loss", 0.8}, {"val_loss", 1.0}, {"accuracy", 0.5}, {"val_accuracy", 0.5}})}));
  write(dir / "trial_0001/trial.json", trial("0001", "failed", nullptr,
                                             {{"learning_rate", 1e-2},
                                              {"optimizer", "sgd"},
                                              {"batch_norm", false},
                                              {"tuner/epochs", 2}},
                                             json::array(), "ValueError: <nan> & boom"));
  write(
      dir / "trial_0002/trial.json",
      trial(
          "0002", "completed", 0.7,
          {{"learning_rate", 1e-3},
           {"optimizer", "adam"},
           {"batch_norm", true},
           {"tuner/epochs", 4},
           {"tuner/trial_id", "0000"}},
          {epoch(2, {{"loss", 0.6}, {"val_loss", "nan"}, {"accuracy", 0.6}, {"val_accuracy", 0.6}}),
           epoch(3,
                 {{"loss", 0.5}, {"val_loss", 0.9}, {"accuracy", 0.7}, {"val_accuracy", 0.7}})}));
}

TEST(CurvesTest, AMetricFirstSeenLaterIsNaNOnTheEarlierEpochs) {
  Curves c;
  c.add_epoch(1, {{"loss", 1.0}});
  c.add_epoch(2, {{"loss", 0.5}, {"val_loss", 0.7}});
  c.add_epoch(3, {{"val_loss", 0.6}});
  EXPECT_EQ(c.epochs, (std::vector<double>{1, 2, 3}));
  EXPECT_TRUE(std::isnan(c.metrics["val_loss"][0]));
  EXPECT_EQ(c.metrics["val_loss"][2], 0.6);
  EXPECT_TRUE(std::isnan(c.metrics["loss"][2]));
}

TEST(HistoryTest, RecorderWritesWhatReadHistoryReadsBackNaNIncluded) {
  const io::TemporaryDirectory tmp("osprey-report-test");
  HistoryRecorder rec;
  train::Logs logs;
  logs.set("loss", 0.75);
  logs.set("accuracy", std::numeric_limits<double>::quiet_NaN());
  rec.on_epoch_end(0, logs);
  logs.set("loss", 0.5);
  logs.set("accuracy", 0.8);
  rec.on_epoch_end(1, logs);
  rec.write(tmp.path() / "history.json");
  EXPECT_EQ(io::read_json_file(tmp.path() / "history.json")["epochs"][0]["metrics"]["accuracy"],
            "nan");
  const Curves c = read_history(tmp.path() / "history.json");
  EXPECT_EQ(c.epochs, (std::vector<double>{1, 2}));  // 1-based
  EXPECT_EQ(c.metrics.at("loss"), (std::vector<double>{0.75, 0.5}));
  EXPECT_TRUE(std::isnan(c.metrics.at("accuracy")[0]));
}

TEST(HistoryTest, AFileOfAnotherKindIsAnErrorNamingIt) {
  const io::TemporaryDirectory tmp("osprey-report-test");
  write(tmp.path() / "history.json", {{"loss", {1, 2}}});
  try {
    read_history(tmp.path() / "history.json");
    FAIL() << "no error";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find((tmp.path() / "history.json").string() +
                                         ": the top-level value is not an osprey history"),
              std::string::npos)
        << e.what();
  }
}

TEST(CsvLogTest, ReadsCsvLoggerFilesAndLeavesOtherCsvsAlone) {
  const io::TemporaryDirectory tmp("osprey-report-test");
  write_text(tmp.path() / "log.csv", "epoch,accuracy,loss\n0,0.5,1.25\n1,0.625,nan\n");
  const auto c = read_csv_log(tmp.path() / "log.csv");
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->epochs, (std::vector<double>{1, 2}));
  EXPECT_EQ(c->metrics.at("accuracy"), (std::vector<double>{0.5, 0.625}));
  EXPECT_TRUE(std::isnan(c->metrics.at("loss")[1]));
  write_text(tmp.path() / "other.csv", "x,y\n1,2\n");
  EXPECT_FALSE(read_csv_log(tmp.path() / "other.csv").has_value());
  write_text(tmp.path() / "bad.csv", "epoch,loss\n0,1\n1,2,3\n");
  EXPECT_THROW(
      {
        try {
          read_csv_log(tmp.path() / "bad.csv");
        } catch (const IoError& e) {
          EXPECT_EQ(std::string(e.what()), (tmp.path() / "bad.csv").string() +
                                               ":3: 3 cells, but the header names 2 columns");
          throw;
        }
      },
      IoError);
}

TEST(StudyTest, ReadsTheTunerTheSpaceAndEveryTrial) {
  const io::TemporaryDirectory tmp("osprey-report-test");
  write_study(tmp.path());
  const Study s = read_study(tmp.path());
  EXPECT_EQ(s.tuner, "Hyperband");
  EXPECT_EQ(s.objective, "val_accuracy");
  EXPECT_TRUE(s.maximize);
  ASSERT_EQ(s.space.size(), 4u);
  EXPECT_TRUE(s.space[0].log);
  EXPECT_EQ(s.space[1].categories, (std::vector<std::string>{"adam", "sgd"}));
  EXPECT_EQ(s.space[2].categories, (std::vector<std::string>{"false", "true"}));
  ASSERT_EQ(s.trials.size(), 3u);
  EXPECT_FALSE(s.trials[1].score.has_value());
  EXPECT_EQ(std::get<std::string>(*s.trials[0].value("batch_norm")), "true");
  ASSERT_NE(s.best(), nullptr);
  EXPECT_EQ(s.best()->id, "0002");
}

TEST(StudyTest, APromotedTrialsCurvesStartWithItsParentsEpochs) {
  const io::TemporaryDirectory tmp("osprey-report-test");
  write_study(tmp.path());
  const Study s = read_study(tmp.path());
  const Curves c = s.curves_of(s.trials[2]);
  EXPECT_EQ(c.epochs, (std::vector<double>{1, 2, 3, 4}));
  EXPECT_EQ(c.metrics.at("loss"), (std::vector<double>{1.0, 0.8, 0.6, 0.5}));
  EXPECT_TRUE(std::isnan(c.metrics.at("val_loss")[2]));
  EXPECT_EQ(c.title, "trial 0002 (continuing trial 0000)");
}

TEST(StudyTest, AMissingOrDamagedTrialFileIsAnErrorNamingIt) {
  const io::TemporaryDirectory tmp("osprey-report-test");
  write_study(tmp.path());
  write_text(tmp.path() / "trial_0001/trial.json", "{\"trial_id\": ");
  try {
    read_study(tmp.path());
    FAIL() << "no error";
  } catch (const IoError& e) {
    EXPECT_TRUE(std::string(e.what()).starts_with((tmp.path() / "trial_0001/trial.json").string()))
        << e.what();
  }
  fs::remove_all(tmp.path() / "trial_0001");
  try {
    read_study(tmp.path());
    FAIL() << "no error";
  } catch (const IoError& e) {
    EXPECT_EQ(std::string(e.what()), fmt::format("{}: lists trial 0001 but {} does not exist",
                                                 (tmp.path() / "oracle.json").string(),
                                                 (tmp.path() / "trial_0001/trial.json").string()));
  }
}

TEST(ReportDataTest, AMissingFolderIsAUsageErrorNamingItAndWhatWasLookedFor) {
  const io::TemporaryDirectory tmp("osprey-report-test");
  const fs::path dir = tmp.path() / "nope";
  try {
    read_report_data(dir);
    FAIL() << "no error";
  } catch (const cli::UsageError& e) {
    EXPECT_EQ(std::string(e.what()),
              "osprey report: " + dir.string() +
                  " does not exist. Expected a folder written by osprey run, osprey tune or osprey "
                  "train, holding " +
                  kLookedFor);
  }
}

TEST(ReportDataTest, AnEmptyFolderIsAUsageErrorNamingWhatWasLookedFor) {
  const io::TemporaryDirectory tmp("osprey-report-test");
  write_text(tmp.path() / "notes.txt", "nothing here\n");
  try {
    read_report_data(tmp.path());
    FAIL() << "no error";
  } catch (const cli::UsageError& e) {
    EXPECT_EQ(std::string(e.what()), "osprey report: " + tmp.path().string() +
                                         " holds nothing to report. Looked for " + kLookedFor);
  }
}

TEST(ReportDataTest, ADamagedFileIsAnIoErrorNamingIt) {
  const io::TemporaryDirectory tmp("osprey-report-test");
  write_text(tmp.path() / "tune/oracle.json", "{\"class_name\": \"Hyperband\",");
  try {
    read_report_data(tmp.path());
    FAIL() << "no error";
  } catch (const IoError& e) {
    EXPECT_TRUE(std::string(e.what()).starts_with((tmp.path() / "tune/oracle.json").string() + ":"))
        << e.what();
  }
}

TEST(ReportTest, ATunerFolderGivesCurvesAndTrialsAndNotesTheRest) {
  const io::TemporaryDirectory tmp("osprey-report-test");
  write_study(tmp.path() / "study" / "project");
  const ReportData data = read_report_data(tmp.path() / "study");  // the study one level below
  ASSERT_EQ(data.studies.size(), 1u);
  const std::string page = render_report(data);
  EXPECT_EQ(plots_in(page, "curves"), 2);  // the best trial's loss and accuracy
  EXPECT_EQ(plots_in(page, "trials"), 2);  // objective by trial, parallel coordinates
  EXPECT_EQ(plots_in(page, "ensemble"), 0);
  EXPECT_EQ(plots_in(page, "stages"), 0);
  EXPECT_NE(page.find("<section id=\"ensemble\" class=\"absent\">"), std::string::npos);
  EXPECT_NE(page.find("best trial 0002 of project"), std::string::npos);
  EXPECT_NE(page.find("ValueError: &lt;nan&gt; &amp; boom"), std::string::npos);
  EXPECT_EQ(page.find("<nan>"), std::string::npos);
  EXPECT_NE(page.find(">batch_norm</text>"), std::string::npos);  // a Boolean axis
  EXPECT_NE(page.find(">epochs</text>"), std::string::npos);      // Hyperband's tuner/epochs
  EXPECT_EQ(page.find(">head</text>"), std::string::npos);        // Fixed: no axis
  EXPECT_EQ(page.find("<script"), std::string::npos);
}

TEST(ReportTest, ARunFolderGivesEverySectionInTheRunsOrder) {
  const io::TemporaryDirectory tmp("osprey-report-test");
  const fs::path run = tmp.path() / "run";
  write_study(run / "tune");
  const auto row = [](const std::string& stage, double acc) {
    return json{{"stage", stage},        {"what", stage + " <row>"},
                {"test_accuracy", acc},  {"samples_per_second", 1000.0},
                {"size_bytes", 2000000}, {"seconds", 5.0}};
  };
  const json members = {{{"name", "cnn_1"}, {"weight", 0.6}, {"test_accuracy", 0.91}},
                        {{"name", "xgboost_features"}, {"weight", 0.4}, {"test_accuracy", 0.88}}};
  write(
      run / "run.json",
      {{"version", 1},
       {"options", {{"budget_seconds", 60.0}, {"dtype_policy", "auto"}}},
       {"elapsed_seconds", 58.5},
       {"stages",
        {{"tune",
          {{"row", row("tune", 0.8)}, {"notes", {{"started_at", 0.0}, {"precision", "float32"}}}}},
         {"retrain", {{"row", row("retrain", 0.85)}, {"notes", {{"started_at", 17.0}}}}},
         {"ensemble",
          {{"row", row("ensemble", 0.9)}, {"notes", {{"started_at", 50.0}, {"members", members}}}}},
         {"quantize",
          {{"row", row("quantize", 0.89)},
           {"notes", {{"started_at", 55.0}, {"precision", "int8"}}}}}}}});
  const json manifest = {{"format", "osprey-ensemble"},
                         {"version", 1},
                         {"combiner", "nelder_mead"},
                         {"weights", {0.6, 0.4}},
                         {"members",
                          {{{"name", "cnn_1"},
                            {"kind", "model"},
                            {"path", "members/cnn_1"},
                            {"config", json::object()}},
                           {{"name", "xgboost_features"},
                            {"kind", "xgboost"},
                            {"path", "members/xgboost_features"},
                            {"config", json::object()}}}}};
  write(run / "ensemble/ensemble.json", manifest);
  write(run / "ensemble_int8/ensemble.json", manifest);
  HistoryRecorder rec;
  train::Logs logs;
  logs.set("loss", 0.5);
  logs.set("accuracy", 0.8);
  rec.on_epoch_end(0, logs);
  fs::create_directories(run / "retrain/member_0");
  rec.write(run / "retrain/member_0/history.json");

  const ReportData data = read_report_data(run);
  ASSERT_TRUE(data.run.has_value());
  std::vector<std::string> order;
  for (const StageInfo& s : data.run->stages) order.push_back(s.stage);
  EXPECT_EQ(order, (std::vector<std::string>{"tune", "retrain", "ensemble", "quantize"}));
  const std::string page = render_report(data);
  EXPECT_EQ(plots_in(page, "curves"), 4);  // retrain/member_0 and the best trial: 2 each
  EXPECT_EQ(plots_in(page, "trials"), 2);
  EXPECT_EQ(plots_in(page, "ensemble"), 1);  // ensemble_int8 repeats its weights: a note
  EXPECT_EQ(plots_in(page, "stages"), 2);    // test accuracy, samples/s
  EXPECT_NE(page.find("ensemble_int8: the same members and weights as ensemble."),
            std::string::npos);
  EXPECT_NE(page.find("<td class=\"num\">91.00%</td>"), std::string::npos);
  EXPECT_NE(page.find("<td>int8</td>"), std::string::npos);
  EXPECT_NE(page.find("<td>retrain &lt;row&gt;</td>"), std::string::npos);
  EXPECT_NE(page.find("<h3>retrain/member_0</h3>"), std::string::npos);
}

TEST(ReportTest, AFolderOfTrainingLogsGivesTheirCurvesAlone) {
  const io::TemporaryDirectory tmp("osprey-report-test");
  write_text(tmp.path() / "train.csv",
             "epoch,accuracy,loss,val_accuracy,val_loss\n0,0.5,1.2,0.45,1.3\n"
             "1,0.6,1.0,0.55,1.1\n");
  write_text(tmp.path() / "notes.csv", "x,y\n1,2\n");  // not a training log: ignored
  const ReportData data = read_report_data(tmp.path());
  ASSERT_EQ(data.curves.size(), 1u);
  EXPECT_EQ(data.curves[0].title, "train.csv");
  const std::string page = render_report(data);
  EXPECT_EQ(plots_in(page, "curves"), 2);
  EXPECT_EQ(plots_in(page, "trials"), 0);
  EXPECT_EQ(count(page, "class=\"absent\""), 3);
}

TEST(ReportTest, WriteReportPutsThePageInTheFolderByDefault) {
  const io::TemporaryDirectory tmp("osprey-report-test");
  write_study(tmp.path());
  EXPECT_EQ(write_report(tmp.path()), tmp.path() / "report.html");
  EXPECT_GT(fs::file_size(tmp.path() / "report.html"), 1000u);
  const fs::path other = tmp.path() / "elsewhere.html";
  EXPECT_EQ(write_report(tmp.path(), other), other);
  EXPECT_TRUE(fs::exists(other));
}

}  // namespace
}  // namespace osprey::cli::report
