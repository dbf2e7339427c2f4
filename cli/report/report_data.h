// What `osprey report DIR` found in DIR, before any HTML: training curves, tuner studies,
// ensembles and osprey run's stage table. Where each comes from:
//   run.json                  osprey run's state: its options and each stage's row (test accuracy,
//                             samples/s, size, seconds), the precision each ran in, the ensemble
//                             members' test accuracies
//   oracle.json               a tuner study, in DIR or a folder just below (osprey tune
//                             --directory D holds D/PROJECT/oracle.json; osprey run, DIR/tune)
//   ensemble.json             an ensemble (osprey ensemble --output, osprey run's ensemble/)
//   history.json, *.csv       per-epoch logs, in DIR or up to two folders below (osprey run's
//                             retrain/member_<i>/history.json, osprey train --csv-log DIR/log.csv)
// Finding none of these is a UsageError naming DIR and all of them; a damaged file is an IoError
// naming it.
#pragma once

#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cli/report/history.h"
#include "cli/report/study.h"

namespace osprey::cli::report {

struct EnsembleMember {
  std::string name{}, kind{};
  double weight = 0;
  double test_accuracy = std::numeric_limits<double>::quiet_NaN();  // none recorded
};

struct EnsembleInfo {
  std::filesystem::path dir{};
  std::string combiner{};
  std::vector<EnsembleMember> members{};
};

// One row of osprey run's table (cli/run_state.h's StageRow, plus the precision it ran in).
struct StageInfo {
  std::string stage{}, what{}, precision{};
  double test_accuracy = 0, samples_per_second = 0, seconds = 0;
  int64_t size_bytes = 0;
};

struct RunInfo {
  std::filesystem::path file{};
  std::vector<std::pair<std::string, std::string>> options{};  // as given to osprey run
  double elapsed_seconds = 0;
  std::vector<StageInfo> stages{};                       // the finished ones, in the run's order
  std::map<std::string, double> member_test_accuracy{};  // the ensemble stage's, by member name
};

struct ReportData {
  std::filesystem::path dir{};
  std::optional<RunInfo> run{};
  std::vector<Curves> curves{};
  std::vector<Study> studies{};
  std::vector<EnsembleInfo> ensembles{};
};

// What the report looks for, for the error when DIR holds none of it.
extern const char* const kLookedFor;

ReportData read_report_data(const std::filesystem::path& dir);

// Readers of single files, exposed for the tests.
RunInfo read_run(const std::filesystem::path& file);
EnsembleInfo read_ensemble(const std::filesystem::path& dir);

}  // namespace osprey::cli::report
