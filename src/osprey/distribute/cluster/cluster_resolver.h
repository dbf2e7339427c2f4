// ClusterResolver: who this process is in a multi-worker job (TensorFlow's
// TFConfigClusterResolver). It reads, first present wins, OSPREY_CONFIG or TF_CONFIG (the same
// JSON), Vertex AI's CLUSTER_SPEC, Open MPI's OMPI_COMM_WORLD_* or Slurm's SLURM_* variables, else
// it is a single worker; a multi-worker strategy asks it for its rank, the group size and the
// chief's address.
//   // TF_CONFIG='{"cluster": {"chief": ["h0:2222"], "worker": ["h1:2222", "h2:2222"]},
//   //             "task": {"type": "worker", "index": 1}}'
//   auto cluster = os::distribute::ClusterResolver::from_environment();
//   cluster.worker_rank();     // 2: the chief is rank 0, then the workers in order
//   cluster.num_workers();     // 3
//   cluster.chief_address();   // "h0:2222"
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace osprey::distribute {

// Job name ("chief", "worker", "ps", "evaluator") to its tasks' "host:port" addresses, in task
// index order (tf.train.ClusterSpec). Under Open MPI, Slurm or the default the launcher gives no
// addresses: the worker job then holds one empty address per process.
struct ClusterSpec {
  std::map<std::string, std::vector<std::string>> jobs;

  // 0 for a job that is not listed.
  int num_tasks(const std::string& job) const;
  // ValueError when the job or the index is not listed.
  const std::string& task_address(const std::string& job, int index) const;
};

// Returns the variable's value, or nothing when it is not set; tests pass a map instead of getenv.
using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;

class ClusterResolver {
 public:
  // Reads the process environment. A variable set to the empty string counts as not set. Throws
  // ValueError naming the variable, the field and the value for anything malformed, and when a
  // JSON config disagrees with the Open MPI or Slurm rank and size of the same process.
  static ClusterResolver from_environment();
  static ClusterResolver from_environment(const EnvLookup& getenv);
  // A TF_CONFIG-style JSON text; `source` names it in errors ("TF_CONFIG", a file name...).
  static ClusterResolver from_json(std::string_view json, std::string source);
  // Vertex AI's CLUSTER_SPEC: worker pools instead of jobs (workerpool0 the chief, workerpool1
  // the workers, workerpool2 the ps, workerpool3 the evaluator), so a job written for Vertex AI
  // runs unchanged. Errors after the pools are mapped name the fields by their job.
  static ClusterResolver from_cluster_spec(std::string_view json);

  // "OSPREY_CONFIG", "TF_CONFIG", "CLUSTER_SPEC", "Open MPI", "Slurm" or "default" (or
  // from_json's source).
  const std::string& source() const { return source_; }
  // "chief", "worker", "ps" or "evaluator"; "worker" under Open MPI, Slurm and the default.
  const std::string& task_type() const { return task_type_; }
  int task_index() const { return task_index_; }
  const ClusterSpec& cluster_spec() const { return spec_; }

  // The all-reduce group of synchronous training: the chief (when listed), then the workers in
  // order. ps and evaluator tasks stay out of it (worker_rank -1).
  int num_workers() const { return num_workers_; }
  int worker_rank() const { return worker_rank_; }
  bool in_collective_group() const { return worker_rank_ >= 0; }
  // The chief, or worker 0 when the cluster lists no chief (TF's rule).
  bool is_chief() const { return worker_rank_ == 0; }
  // Address of rank 0 of the group, and this task's own; "" when the launcher gave none (Open
  // MPI, Slurm, the default, an evaluator outside the cluster).
  std::string chief_address() const;
  std::string task_address() const;
  // This task among the processes on its host: from OMPI_COMM_WORLD_LOCAL_RANK/_SIZE or
  // SLURM_LOCALID and the tasks per node when set, else from the group entries that share this
  // task's host in the JSON config, else 0 of 1.
  int local_rank() const { return local_rank_; }
  int local_size() const { return local_size_; }

  // Multi-line text for `osprey info`: source, task, rank and size, each job's addresses.
  std::string describe() const;

 private:
  ClusterResolver() = default;

  std::string source_;
  std::string task_type_ = "worker";
  int task_index_ = 0;
  ClusterSpec spec_;
  int num_workers_ = 1;
  int worker_rank_ = 0;
  int local_rank_ = 0;
  int local_size_ = 1;
};

}  // namespace osprey::distribute
