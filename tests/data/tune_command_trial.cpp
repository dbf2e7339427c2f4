// A C++ trial program for `osprey tune --command` (tests/tune_command_test.sh, case
// report_metric): the same known optimum as tune_command_trial.py, reported with
// tune::report_metric, so the test covers both of its channels (stdout without
// OSPREY_METRIC_FILE, the JSON-lines file under osprey tune).
//   tune_command_trial X Y EPOCHS [METRIC_NAME]
// loss = (x - 3)^2 + (y - 0.5)^2 + 1 / (epoch + 1) after each epoch; a METRIC_NAME that
// report_metric refuses ends the program with its message and exit status 2.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "osprey/core/error.h"
#include "osprey/tune/report_metric.h"

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s X Y EPOCHS [METRIC_NAME]\n", argv[0]);
    return 2;
  }
  const double x = std::atof(argv[1]);
  const double y = std::atof(argv[2]);
  const int epochs = std::atoi(argv[3]);
  const std::string name = argc > 4 ? argv[4] : "loss";
  try {
    for (int epoch = 0; epoch < epochs; ++epoch) {
      const double loss = (x - 3) * (x - 3) + (y - 0.5) * (y - 0.5) + 1.0 / (epoch + 1);
      osprey::tune::report_metric(name, loss, epoch);
    }
  } catch (const osprey::Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
  return 0;
}
