// ClusterResolver: resolution order, ranks of the all-reduce group, local ranks, and the exact
// message of every malformed config or launcher variable.
#include "osprey/distribute/cluster/cluster_resolver.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "osprey/core/error.h"

namespace osprey::distribute {
namespace {

using Env = std::map<std::string, std::string>;

EnvLookup lookup(const Env& env) {
  return [env](const std::string& name) -> std::optional<std::string> {
    const auto it = env.find(name);
    return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
}

ClusterResolver resolve(const Env& env) { return ClusterResolver::from_environment(lookup(env)); }

std::string env_error(const Env& env) {
  try {
    resolve(env);
  } catch (const ValueError& e) {
    return e.what();
  }
  return "no error";
}

std::string json_error(const std::string& json) { return env_error({{"TF_CONFIG", json}}); }

constexpr const char* kCluster =
    R"("cluster": {"chief": ["h0:2222"], "worker": ["h1:2222", "h2:2222"], "ps": ["h3:2222"],
                   "evaluator": ["h4:2222"]})";

std::string config(const std::string& type, int index) {
  return "{" + std::string(kCluster) + R"(, "task": {"type": ")" + type + R"(", "index": )" +
         std::to_string(index) + "}}";
}

TEST(ClusterResolverTest, ChiefIsRankZeroAndWorkersFollowInOrder) {
  const ClusterResolver worker = resolve({{"TF_CONFIG", config("worker", 1)}});
  EXPECT_EQ(worker.source(), "TF_CONFIG");
  EXPECT_EQ(worker.task_type(), "worker");
  EXPECT_EQ(worker.task_index(), 1);
  EXPECT_EQ(worker.num_workers(), 3);
  EXPECT_EQ(worker.worker_rank(), 2);
  EXPECT_FALSE(worker.is_chief());
  EXPECT_TRUE(worker.in_collective_group());
  EXPECT_EQ(worker.chief_address(), "h0:2222");
  EXPECT_EQ(worker.task_address(), "h2:2222");
  EXPECT_EQ(worker.cluster_spec().num_tasks("worker"), 2);
  EXPECT_EQ(worker.cluster_spec().task_address("ps", 0), "h3:2222");
  EXPECT_EQ(resolve({{"TF_CONFIG", config("worker", 0)}}).worker_rank(), 1);
  const ClusterResolver chief = resolve({{"TF_CONFIG", config("chief", 0)}});
  EXPECT_EQ(chief.worker_rank(), 0);
  EXPECT_TRUE(chief.is_chief());
  EXPECT_EQ(chief.task_address(), "h0:2222");
}

TEST(ClusterResolverTest, WorkerZeroIsChiefWhenNoChiefIsListed) {
  const std::string json = R"({"cluster": {"worker": ["a:1", "b:1"]}, "task": {"type": "worker",
                               "index": 0}})";
  const ClusterResolver r = resolve({{"TF_CONFIG", json}});
  EXPECT_TRUE(r.is_chief());
  EXPECT_EQ(r.worker_rank(), 0);
  EXPECT_EQ(r.num_workers(), 2);
  EXPECT_EQ(r.chief_address(), "a:1");
}

TEST(ClusterResolverTest, EvaluatorStaysOutOfTheAllReduceGroup) {
  const ClusterResolver r = resolve({{"TF_CONFIG", config("evaluator", 0)}});
  EXPECT_FALSE(r.in_collective_group());
  EXPECT_EQ(r.worker_rank(), -1);
  EXPECT_FALSE(r.is_chief());
  EXPECT_EQ(r.num_workers(), 3);
  EXPECT_EQ(r.task_address(), "h4:2222");
}

TEST(ClusterResolverTest, EvaluatorMayRunOutsideTheClusterAsInTensorFlow) {
  const ClusterResolver r =
      resolve({{"TF_CONFIG", R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "evaluator"
                      , "index": 0}})"}});
  EXPECT_EQ(r.worker_rank(), -1);
  EXPECT_EQ(r.task_address(), "");
  EXPECT_EQ(json_error(R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "evaluator",
                            "index": 1}})"),
            "TF_CONFIG: task.index must be 0 for an evaluator outside the cluster (there is at "
            "most one evaluator). Received: task.index=1");
}

TEST(ClusterResolverTest, ParameterServerIsOutsideTheGroup) {
  const ClusterResolver r = resolve({{"TF_CONFIG", config("ps", 0)}});
  EXPECT_EQ(r.task_type(), "ps");
  EXPECT_EQ(r.worker_rank(), -1);
  EXPECT_FALSE(r.in_collective_group());
  EXPECT_EQ(r.chief_address(), "h0:2222");
  EXPECT_EQ(r.task_address(), "h3:2222");
}

TEST(ClusterResolverTest, OspreyConfigWinsOverTfConfig) {
  const ClusterResolver r =
      resolve({{"OSPREY_CONFIG", config("chief", 0)}, {"TF_CONFIG", "not json"}});
  EXPECT_EQ(r.source(), "OSPREY_CONFIG");
  EXPECT_EQ(r.task_type(), "chief");
}

// Vertex AI's custom jobs (seed 002) pass the cluster as worker pools.
constexpr const char* kVertexSpec =
    R"({"cluster": {"workerpool0": ["cmle-0:2222"], "workerpool1": ["cmle-1:2222", "cmle-2:2222"],
                    "workerpool2": ["cmle-3:2222"]},
        "environment": "cloud", "task": {"type": "workerpool1", "index": 1, "trial": ""},
        "job": "{\"python_module\": \"\"}"})";

TEST(ClusterResolverTest, VertexClusterSpecMapsWorkerPoolsToJobs) {
  const ClusterResolver r = resolve({{"CLUSTER_SPEC", kVertexSpec}});
  EXPECT_EQ(r.source(), "CLUSTER_SPEC");
  EXPECT_EQ(r.task_type(), "worker");
  EXPECT_EQ(r.task_index(), 1);
  EXPECT_EQ(r.worker_rank(), 2);  // the primary replica (chief) is rank 0
  EXPECT_EQ(r.num_workers(), 3);
  EXPECT_EQ(r.chief_address(), "cmle-0:2222");
  EXPECT_EQ(r.cluster_spec().task_address("ps", 0), "cmle-3:2222");
}

TEST(ClusterResolverTest, TfConfigWinsOverClusterSpecAndBadPoolsAreNamed) {
  EXPECT_EQ(resolve({{"TF_CONFIG", config("ps", 0)}, {"CLUSTER_SPEC", "not json"}}).source(),
            "TF_CONFIG");
  EXPECT_EQ(env_error({{"CLUSTER_SPEC",
                        R"({"cluster": {"workerpool4": ["a:1"]}, "task": {"type": "workerpool0",
                            "index": 0}})"}}),
            "CLUSTER_SPEC: unknown worker pool. Expected workerpool0 (chief), workerpool1 "
            "(worker), workerpool2 (ps) or workerpool3 (evaluator). Received: "
            "cluster.workerpool4=[\"a:1\"]");
  EXPECT_EQ(env_error({{"CLUSTER_SPEC",
                        R"({"cluster": {"workerpool0": ["a:1"]}, "task": {"type": "chief",
                            "index": 0}})"}}),
            "CLUSTER_SPEC: unknown worker pool. Expected workerpool0 (chief), workerpool1 "
            "(worker), workerpool2 (ps) or workerpool3 (evaluator). Received: "
            "task.type=\"chief\"");
  EXPECT_EQ(env_error({{"CLUSTER_SPEC", "{"}}).substr(0, 38),
            "CLUSTER_SPEC is not valid JSON (byte 2");
  EXPECT_EQ(env_error({{"CLUSTER_SPEC", R"({"cluster": {"workerpool0": ["a:1"]}})"}}),
            "CLUSTER_SPEC: \"task\" must be an object such as {\"type\": \"worker\", \"index\": "
            "0}. Received: no task");
}

TEST(ClusterResolverTest, EmptyVariableCountsAsUnset) {
  EXPECT_EQ(resolve({{"OSPREY_CONFIG", ""}, {"TF_CONFIG", config("ps", 0)}}).source(), "TF_CONFIG");
  EXPECT_EQ(resolve({{"TF_CONFIG", ""}}).source(), "default");
}

TEST(ClusterResolverTest, OpenMpiMakesEveryProcessAWorkerWithoutAddresses) {
  const ClusterResolver r = resolve({{"OMPI_COMM_WORLD_RANK", "3"},
                                     {"OMPI_COMM_WORLD_SIZE", "8"},
                                     {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                                     {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}});
  EXPECT_EQ(r.source(), "Open MPI");
  EXPECT_EQ(r.task_type(), "worker");
  EXPECT_EQ(r.task_index(), 3);
  EXPECT_EQ(r.worker_rank(), 3);
  EXPECT_EQ(r.num_workers(), 8);
  EXPECT_EQ(r.local_rank(), 1);
  EXPECT_EQ(r.local_size(), 4);
  EXPECT_FALSE(r.is_chief());
  EXPECT_EQ(r.chief_address(), "");
  EXPECT_EQ(r.task_address(), "");
  EXPECT_EQ(r.cluster_spec().num_tasks("worker"), 8);
}

TEST(ClusterResolverTest, SlurmMakesEveryProcessAWorker) {
  const ClusterResolver r = resolve({{"SLURM_PROCID", "0"},
                                     {"SLURM_NTASKS", "8"},
                                     {"SLURM_LOCALID", "0"},
                                     {"SLURM_NTASKS_PER_NODE", "4"}});
  EXPECT_EQ(r.source(), "Slurm");
  EXPECT_EQ(r.worker_rank(), 0);
  EXPECT_TRUE(r.is_chief());
  EXPECT_EQ(r.num_workers(), 8);
  EXPECT_EQ(r.local_size(), 4);
}

TEST(ClusterResolverTest, SlurmTasksPerNodeGivesTheLocalSizeOfThisNode) {
  const Env env = {{"SLURM_PROCID", "6"},
                   {"SLURM_NTASKS", "7"},
                   {"SLURM_LOCALID", "0"},
                   {"SLURM_TASKS_PER_NODE", "2(x3),1"},
                   {"SLURM_NODEID", "3"}};
  EXPECT_EQ(resolve(env).local_size(), 1);
  Env second = env;
  second["SLURM_PROCID"] = "3";
  second["SLURM_LOCALID"] = "1";
  second["SLURM_NODEID"] = "1";
  EXPECT_EQ(resolve(second).local_rank(), 1);
  EXPECT_EQ(resolve(second).local_size(), 2);
  second["SLURM_TASKS_PER_NODE"] = "2(x3";
  EXPECT_EQ(env_error(second),
            "Slurm: SLURM_TASKS_PER_NODE must list task counts such as 2(x3),1. Received: "
            "SLURM_TASKS_PER_NODE=2(x3");
}

TEST(ClusterResolverTest, OpenMpiWinsOverTheSlurmAllocationAroundIt) {
  const ClusterResolver r = resolve({{"OMPI_COMM_WORLD_RANK", "1"},
                                     {"OMPI_COMM_WORLD_SIZE", "2"},
                                     {"SLURM_PROCID", "0"},
                                     {"SLURM_NTASKS", "1"}});
  EXPECT_EQ(r.source(), "Open MPI");
  EXPECT_EQ(r.worker_rank(), 1);
}

TEST(ClusterResolverTest, DefaultIsASingleWorker) {
  const ClusterResolver r = resolve({});
  EXPECT_EQ(r.source(), "default");
  EXPECT_EQ(r.task_type(), "worker");
  EXPECT_EQ(r.worker_rank(), 0);
  EXPECT_EQ(r.num_workers(), 1);
  EXPECT_TRUE(r.is_chief());
  EXPECT_EQ(r.local_rank(), 0);
  EXPECT_EQ(r.local_size(), 1);
}

TEST(ClusterResolverTest, LocalRankCountsGroupTasksOnTheSameHost) {
  const std::string json = R"({"cluster": {"chief": ["a:1"], "worker": ["b:1", "a:2", "a:3"],
                               "ps": ["a:4"]}, "task": {"type": "worker", "index": 2}})";
  const ClusterResolver r = ClusterResolver::from_json(json, "test.json");
  EXPECT_EQ(r.source(), "test.json");
  EXPECT_EQ(r.local_rank(), 2);  // a:1 (chief), a:2, then a:3; b:1 and the ps do not count
  EXPECT_EQ(r.local_size(), 3);
  const ClusterResolver under_mpi = resolve({{"TF_CONFIG", json},
                                             {"OMPI_COMM_WORLD_RANK", "3"},
                                             {"OMPI_COMM_WORLD_SIZE", "4"},
                                             {"OMPI_COMM_WORLD_LOCAL_RANK", "0"},
                                             {"OMPI_COMM_WORLD_LOCAL_SIZE", "1"}});
  EXPECT_EQ(under_mpi.local_rank(), 0);  // the launcher knows better
  EXPECT_EQ(under_mpi.local_size(), 1);
}

TEST(ClusterResolverTest, DescribeNamesSourceTaskRankAndAddresses) {
  EXPECT_EQ(resolve({{"TF_CONFIG", config("worker", 1)}}).describe(),
            "TF_CONFIG, task worker[1], rank 2 of 3, local rank 0 of 1\n"
            "  chief: h0:2222\n  worker: h1:2222, h2:2222\n  ps: h3:2222\n  evaluator: h4:2222");
  EXPECT_EQ(resolve({{"TF_CONFIG", config("evaluator", 0)}}).describe().substr(0, 67),
            "TF_CONFIG, task evaluator[0], outside the all-reduce group of 3 wor");
  EXPECT_EQ(
      resolve({}).describe(),
      "default (no OSPREY_CONFIG, TF_CONFIG, CLUSTER_SPEC, Open MPI or Slurm variables), task "
      "worker[0], "
      "rank 0 of 1 (chief), local rank 0 of 1");
}

TEST(ClusterResolverTest, MalformedJsonNamesTheVariableAndTheByte) {
  const std::string e = env_error({{"OSPREY_CONFIG", R"({"cluster": x})"}});
  EXPECT_EQ(e.rfind("OSPREY_CONFIG is not valid JSON (byte 13): parse error", 0), 0u) << e;
}

TEST(ClusterResolverTest, ClusterMustBeAnObjectOfKnownJobs) {
  EXPECT_EQ(json_error("[1]"),
            "TF_CONFIG must be a JSON object with \"cluster\" and \"task\". Received: [1]");
  EXPECT_EQ(json_error(R"({"task": {"type": "worker", "index": 0}})"),
            "TF_CONFIG: \"cluster\" must be an object of job name to \"host:port\" addresses, "
            "such as {\"worker\": [\"host0:2222\", \"host1:2222\"]}. Received: no cluster");
  EXPECT_NE(json_error(R"({"cluster": ["a:1"]})").find("Received: cluster=[\"a:1\"]"),
            std::string::npos);
  EXPECT_EQ(json_error(R"({"cluster": {"workers": ["a:1"]}})"),
            "TF_CONFIG: unknown job in cluster. Expected one of chief, worker, ps, evaluator. "
            "Received: cluster.workers=[\"a:1\"]");
  EXPECT_EQ(json_error(R"({"cluster": {"ps": ["a:1"]}})"),
            "TF_CONFIG: the cluster lists no chief or worker. Expected at least one task to "
            "train. Received: cluster={\"ps\":[\"a:1\"]}");
}

TEST(ClusterResolverTest, JobMustBeAListOfHostPortStrings) {
  EXPECT_EQ(json_error(R"({"cluster": {"worker": "a:1"}})"),
            "TF_CONFIG: cluster.worker must be a list of \"host:port\" strings. Received: "
            "cluster.worker=\"a:1\"");
  EXPECT_EQ(json_error(R"({"cluster": {"worker": ["a:1", 7]}})"),
            "TF_CONFIG: cluster.worker[1] must be a \"host:port\" string with a port from 1 to "
            "65535. Received: cluster.worker[1]=7");
  for (const char* bad : {"a", "a:0", "a:65536", "a:http", ":80", "::1:80", "a:", "a :80"}) {
    const std::string e = json_error(std::string(R"({"cluster": {"ps": [")") + bad + "\"]}}");
    EXPECT_NE(e.find("TF_CONFIG: cluster.ps[0] must be a \"host:port\" string"), std::string::npos)
        << bad << ": " << e;
  }
  EXPECT_EQ(resolve({{"TF_CONFIG", R"({"cluster": {"worker": ["[::1]:80", "h:65535"]},
                                       "task": {"type": "worker", "index": 1}})"}})
                .task_address(),
            "h:65535");
}

TEST(ClusterResolverTest, AddressListedTwiceNamesBothPlaces) {
  EXPECT_EQ(json_error(R"({"cluster": {"worker": ["a:1", "b:1"], "ps": ["b:1"]}})"),
            "TF_CONFIG: the address \"b:1\" is listed twice, as cluster.worker[1] and "
            "cluster.ps[0]. Expected each task to have its own host:port");
}

TEST(ClusterResolverTest, AtMostOneChiefAndOneEvaluator) {
  EXPECT_EQ(json_error(R"({"cluster": {"chief": ["a:1", "b:1"]}})"),
            "TF_CONFIG: cluster.chief must list at most one task. Received: "
            "cluster.chief=[\"a:1\",\"b:1\"]");
  EXPECT_EQ(json_error(R"({"cluster": {"worker": ["a:1"], "evaluator": ["b:1", "c:1"]}})"),
            "TF_CONFIG: cluster.evaluator must list at most one task. Received: "
            "cluster.evaluator=[\"b:1\",\"c:1\"]");
}

TEST(ClusterResolverTest, TaskNeedsAKnownTypeAndANonNegativeIndex) {
  const std::string c = R"({"cluster": {"worker": ["a:1", "b:1"]})";
  EXPECT_EQ(json_error(c + "}"),
            "TF_CONFIG: \"task\" must be an object such as {\"type\": \"worker\", \"index\": 0}. "
            "Received: no task");
  EXPECT_EQ(json_error(c + R"(, "task": {"index": 0}})"),
            "TF_CONFIG: task.type must be one of chief, worker, ps, evaluator. Received: no "
            "task.type");
  EXPECT_EQ(json_error(c + R"(, "task": {"type": 1, "index": 0}})"),
            "TF_CONFIG: task.type must be one of chief, worker, ps, evaluator. Received: "
            "task.type=1");
  EXPECT_EQ(json_error(c + R"(, "task": {"type": "master", "index": 0}})"),
            "TF_CONFIG: task.type must be one of chief, worker, ps, evaluator. Received: "
            "task.type=\"master\"");
  EXPECT_EQ(json_error(c + R"(, "task": {"type": "worker"}})"),
            "TF_CONFIG: task.index must be a non-negative integer. Received: no task.index");
  EXPECT_EQ(json_error(c + R"(, "task": {"type": "worker", "index": -1}})"),
            "TF_CONFIG: task.index must be a non-negative integer. Received: task.index=-1");
  EXPECT_EQ(json_error(c + R"(, "task": {"type": "worker", "index": "0"}})"),
            "TF_CONFIG: task.index must be a non-negative integer. Received: task.index=\"0\"");
  EXPECT_EQ(json_error(c + R"(, "task": {"type": "worker", "index": 1.5}})"),
            "TF_CONFIG: task.index must be a non-negative integer. Received: task.index=1.5");
}

TEST(ClusterResolverTest, TaskMustBeInTheCluster) {
  const std::string c = R"({"cluster": {"worker": ["a:1", "b:1"]})";
  EXPECT_EQ(json_error(c + R"(, "task": {"type": "worker", "index": 2}})"),
            "TF_CONFIG: task.index is out of range for worker, which lists 2 tasks. Expected an "
            "index from 0 to 1. Received: task.index=2");
  EXPECT_EQ(json_error(c + R"(, "task": {"type": "ps", "index": 0}})"),
            "TF_CONFIG: task.type is not a job of the cluster. Expected one of the cluster's "
            "jobs: worker. Received: task.type=\"ps\"");
}

TEST(ClusterResolverTest, ConfigMustAgreeWithTheLauncher) {
  const Env mpi = {{"OMPI_COMM_WORLD_RANK", "2"}, {"OMPI_COMM_WORLD_SIZE", "3"}};
  Env env = mpi;
  env["TF_CONFIG"] = config("worker", 1);
  EXPECT_EQ(resolve(env).worker_rank(), 2);
  env["OMPI_COMM_WORLD_SIZE"] = "4";
  EXPECT_EQ(env_error(env),
            "TF_CONFIG lists 3 workers (chief and worker) but Open MPI started 4 processes. "
            "Expected OMPI_COMM_WORLD_SIZE=3. Received: OMPI_COMM_WORLD_SIZE=4");
  env = mpi;
  env["OSPREY_CONFIG"] = config("worker", 0);
  EXPECT_EQ(env_error(env),
            "OSPREY_CONFIG makes this task (worker[0]) rank 1 of the group (chief, then workers) "
            "but Open MPI gave it rank 2. Expected OMPI_COMM_WORLD_RANK=1. Received: "
            "OMPI_COMM_WORLD_RANK=2");
  EXPECT_EQ(
      env_error({{"TF_CONFIG", config("chief", 0)}, {"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}}),
      "TF_CONFIG lists 3 workers (chief and worker) but Slurm started 2 processes. Expected "
      "SLURM_NTASKS=3. Received: SLURM_NTASKS=2");
  env = mpi;
  env["TF_CONFIG"] = config("ps", 0);  // outside the all-reduce world: not checked
  EXPECT_EQ(resolve(env).task_type(), "ps");
}

TEST(ClusterResolverTest, LauncherVariablesMustBeConsistentIntegers) {
  EXPECT_EQ(env_error({{"OMPI_COMM_WORLD_RANK", "one"}, {"OMPI_COMM_WORLD_SIZE", "2"}}),
            "Open MPI: OMPI_COMM_WORLD_RANK must be a non-negative integer. Received: "
            "OMPI_COMM_WORLD_RANK=one");
  EXPECT_EQ(env_error({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "0"}}),
            "Open MPI: OMPI_COMM_WORLD_SIZE must be a positive integer. Received: "
            "OMPI_COMM_WORLD_SIZE=0");
  EXPECT_EQ(env_error({{"OMPI_COMM_WORLD_RANK", "2"}, {"OMPI_COMM_WORLD_SIZE", "2"}}),
            "Open MPI: OMPI_COMM_WORLD_RANK must be less than OMPI_COMM_WORLD_SIZE. Received: "
            "OMPI_COMM_WORLD_RANK=2, OMPI_COMM_WORLD_SIZE=2");
  EXPECT_EQ(env_error({{"SLURM_PROCID", "1"}}),
            "Slurm: SLURM_PROCID is set but SLURM_NTASKS is not. Expected both. Received: "
            "SLURM_PROCID=1");
  EXPECT_EQ(env_error({{"SLURM_PROCID", "1"},
                       {"SLURM_NTASKS", "4"},
                       {"SLURM_LOCALID", "2"},
                       {"SLURM_NTASKS_PER_NODE", "2"}}),
            "Slurm: the local rank and size must satisfy local rank < local size <= "
            "SLURM_NTASKS. Received: SLURM_LOCALID=2, local size 2");
}

}  // namespace
}  // namespace osprey::distribute
