// WorkerGroup: its errors name the strategy that connects (MultiWorkerMirroredStrategy,
// ModelParallel and PipelineParallel share it), and the communication names that flags and
// configs use round-trip through the enum, anything else refused with the valid names.
#include "osprey/distribute/cluster/worker_group.h"

#include <gtest/gtest.h>

#include <string>

#include "osprey/core/error.h"

namespace osprey::distribute {
namespace {

// An evaluator of a chief-and-two-workers cluster: outside the all-reduce group.
ClusterResolver evaluator() {
  return ClusterResolver::from_json(
      R"({"cluster": {"chief": ["h0:2222"], "worker": ["h1:2222", "h2:2222"],
                      "evaluator": ["h4:2222"]},
          "task": {"type": "evaluator", "index": 0}})",
      "TF_CONFIG");
}

std::string connect_error(const ClusterResolver& cluster, const WorkerGroupOptions& options) {
  try {
    WorkerGroup::connect(cluster, options);
  } catch (const ValueError& e) {
    return e.what();
  }
  return "no error";
}

TEST(WorkerGroupTest, ErrorsNameTheCallerThatConnects) {
  EXPECT_EQ(connect_error(evaluator(), {.caller = "ModelParallel"}),
            "ModelParallel: task evaluator:0 (TF_CONFIG) is not a worker; only the chief and the "
            "workers join the all-reduce group");
  EXPECT_EQ(connect_error(evaluator(), {.caller = "PipelineParallel"}).substr(0, 18),
            "PipelineParallel: ");
  // The single worker of a default cluster connects at once, so only the option check fails.
  const ClusterResolver single =
      ClusterResolver::from_environment([](const std::string&) { return std::nullopt; });
  EXPECT_EQ(connect_error(single, {.caller = "PipelineParallel", .timeout = {}}),
            "PipelineParallel: timeout must be positive. Received: 0 ms");
  EXPECT_EQ(WorkerGroup::connect(single, {.caller = "ModelParallel"})->backend(), "none");
}

TEST(WorkerGroupTest, CommunicationNamesRoundTripAndOthersAreRefused) {
  for (Communication c : {Communication::automatic, Communication::mpi, Communication::gloo}) {
    EXPECT_EQ(parse_communication(to_string(c), "test"), c) << to_string(c);
  }
  EXPECT_EQ(to_string(Communication::automatic), "auto");
  try {
    parse_communication("nccl", "osprey train: --communication");
    FAIL() << "parsed 'nccl'";
  } catch (const ValueError& e) {
    EXPECT_EQ(std::string(e.what()),
              "osprey train: --communication: communication must be auto, mpi or gloo. "
              "Received: 'nccl'");
  }
}

}  // namespace
}  // namespace osprey::distribute
