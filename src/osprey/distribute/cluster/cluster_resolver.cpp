// ClusterResolver: a TF_CONFIG-style JSON config (or Vertex AI's CLUSTER_SPEC), else Open MPI's or
// Slurm's variables, else a single worker. Every message names the variable, the field and the
// value it received.
#include "osprey/distribute/cluster/cluster_resolver.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "osprey/core/error.h"

namespace osprey::distribute {
namespace {

using nlohmann::json;

// Canonical job order: the all-reduce group (chief, then workers) first.
constexpr std::array<std::string_view, 4> kJobs = {"chief", "worker", "ps", "evaluator"};
constexpr std::string_view kJobList = "chief, worker, ps, evaluator";

bool known_job(std::string_view name) {
  return std::find(kJobs.begin(), kJobs.end(), name) != kJobs.end();
}

// JSON text for a "Received:" clause, cut short.
std::string shown(const json& j) {
  std::string s = j.dump();
  return s.size() > 160 ? s.substr(0, 157) + "..." : s;
}

std::optional<int> parse_int(std::string_view s) {
  int v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

// "host:port" with a port from 1 to 65535; an IPv6 host is bracketed: "[::1]:2222".
bool valid_address(std::string_view a) {
  const size_t colon = a.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return false;
  const std::string_view host = a.substr(0, colon), port = a.substr(colon + 1);
  if (host.find_first_of(" \t\n") != std::string_view::npos) return false;
  if (host.find(':') != std::string_view::npos && (host.front() != '[' || host.back() != ']')) {
    return false;
  }
  if (port.empty() || port.size() > 5 ||
      !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return false;
  }
  const int p = parse_int(port).value_or(0);
  return p >= 1 && p <= 65535;
}

std::string_view host_of(std::string_view address) { return address.substr(0, address.rfind(':')); }

// Rank r of the all-reduce group: the chief (when listed), then the workers.
const std::string& group_address(const ClusterSpec& spec, int rank) {
  const int chiefs = spec.num_tasks("chief");
  return rank < chiefs ? spec.task_address("chief", rank)
                       : spec.task_address("worker", rank - chiefs);
}

std::optional<std::string> get(const EnvLookup& env, const std::string& name) {
  std::optional<std::string> v = env(name);
  if (v && v->empty()) return std::nullopt;
  return v;
}

int read_int(std::string_view launcher, std::string_view var, const std::string& value, int min) {
  const std::optional<int> v = parse_int(value);
  OSPREY_CHECK(v && *v >= min, "{}: {} must be a {} integer. Received: {}={}", launcher, var,
               min == 0 ? "non-negative" : "positive", var, value);
  return *v;
}

// SLURM_TASKS_PER_NODE, "2(x3),1": 2 tasks on each of nodes 0-2, 1 on node 3.
int slurm_tasks_on_node(const std::string& value, int node) {
  int first = 0;
  for (size_t pos = 0; pos <= value.size();) {
    const size_t comma = std::min(value.find(',', pos), value.size());
    const std::string_view item(value.data() + pos, comma - pos);
    const size_t x = item.find("(x");
    const std::optional<int> count = parse_int(item.substr(0, x));
    std::optional<int> repeat = 1;
    if (x != std::string_view::npos) repeat = parse_int(item.substr(x + 2, item.size() - x - 3));
    OSPREY_CHECK(count && repeat && *count >= 1 && *repeat >= 1 &&
                     (x == std::string_view::npos || item.back() == ')'),
                 "Slurm: SLURM_TASKS_PER_NODE must list task counts such as 2(x3),1. Received: "
                 "SLURM_TASKS_PER_NODE={}",
                 value);
    if (node < first + *repeat) return *count;
    first += *repeat;
    pos = comma + 1;
  }
  OSPREY_THROW(ValueError,
               "Slurm: SLURM_NODEID must be a node of SLURM_TASKS_PER_NODE, from 0 to {}. "
               "Received: SLURM_NODEID={}, SLURM_TASKS_PER_NODE={}",
               first - 1, node, value);
}

struct LauncherVars {
  std::string_view name, rank, size, local_rank, local_size;
};
// Open MPI first: mpirun inside a Slurm allocation keeps the allocation's SLURM_* variables.
constexpr std::array<LauncherVars, 2> kLaunchers = {{
    {"Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
     "OMPI_COMM_WORLD_LOCAL_SIZE"},
    {"Slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NTASKS_PER_NODE"},
}};

// The rank and size a launcher gave this process.
struct Launcher {
  const LauncherVars* vars = nullptr;
  int rank = 0, size = 1;
  std::optional<int> local_rank, local_size;
};

std::optional<Launcher> read_launcher(const EnvLookup& env) {
  for (const LauncherVars& v : kLaunchers) {
    const std::optional<std::string> rank = get(env, std::string(v.rank));
    if (!rank) continue;
    const std::optional<std::string> size = get(env, std::string(v.size));
    OSPREY_CHECK(size.has_value(), "{}: {} is set but {} is not. Expected both. Received: {}={}",
                 v.name, v.rank, v.size, v.rank, *rank);
    Launcher l;
    l.vars = &v;
    l.rank = read_int(v.name, v.rank, *rank, 0);
    l.size = read_int(v.name, v.size, *size, 1);
    OSPREY_CHECK(l.rank < l.size, "{}: {} must be less than {}. Received: {}={}, {}={}", v.name,
                 v.rank, v.size, v.rank, l.rank, v.size, l.size);
    const std::optional<std::string> local_rank = get(env, std::string(v.local_rank));
    const std::optional<std::string> local_size = get(env, std::string(v.local_size));
    if (local_rank) l.local_rank = read_int(v.name, v.local_rank, *local_rank, 0);
    if (local_size) l.local_size = read_int(v.name, v.local_size, *local_size, 1);
    const auto per_node = get(env, "SLURM_TASKS_PER_NODE"), node = get(env, "SLURM_NODEID");
    if (v.name == "Slurm" && !local_size && per_node && node) {  // no --ntasks-per-node
      l.local_size = slurm_tasks_on_node(*per_node, read_int(v.name, "SLURM_NODEID", *node, 0));
    }
    OSPREY_CHECK(!l.local_rank || !l.local_size ||
                     (*l.local_rank < *l.local_size && *l.local_size <= l.size),
                 "{}: the local rank and size must satisfy local rank < local size <= {}. "
                 "Received: {}={}, local size {}",
                 v.name, v.size, v.local_rank, *l.local_rank, *l.local_size);
    return l;
  }
  return std::nullopt;
}

ClusterSpec parse_cluster(const json& config, const std::string& src) {
  const auto it = config.find("cluster");
  OSPREY_CHECK(it != config.end() && it->is_object(),
               "{}: \"cluster\" must be an object of job name to \"host:port\" addresses, such "
               "as {{\"worker\": [\"host0:2222\", \"host1:2222\"]}}. Received: {}",
               src, it == config.end() ? "no cluster" : "cluster=" + shown(*it));
  for (const auto& job : it->items()) {
    OSPREY_CHECK(known_job(job.key()),
                 "{}: unknown job in cluster. Expected one of {}. Received: cluster.{}={}", src,
                 kJobList, job.key(), shown(job.value()));
  }
  ClusterSpec spec;
  std::map<std::string, std::string> where;  // address -> "cluster.worker[1]"
  for (const std::string_view job_name : kJobs) {
    const std::string job(job_name);
    const auto tasks = it->find(job);
    if (tasks == it->end()) continue;
    OSPREY_CHECK(tasks->is_array(),
                 "{}: cluster.{} must be a list of \"host:port\" strings. Received: cluster.{}={}",
                 src, job, job, shown(*tasks));
    OSPREY_CHECK((job != "chief" && job != "evaluator") || tasks->size() <= 1,
                 "{}: cluster.{} must list at most one task. Received: cluster.{}={}", src, job,
                 job, shown(*tasks));
    std::vector<std::string>& addresses = spec.jobs[job];
    for (size_t i = 0; i < tasks->size(); ++i) {
      const json& a = (*tasks)[i];
      const std::string field = fmt::format("cluster.{}[{}]", job, i);
      OSPREY_CHECK(a.is_string() && valid_address(a.get_ref<const std::string&>()),
                   "{}: {} must be a \"host:port\" string with a port from 1 to 65535. "
                   "Received: {}={}",
                   src, field, field, shown(a));
      const auto [previous, fresh] = where.emplace(a.get<std::string>(), field);
      OSPREY_CHECK(fresh,
                   "{}: the address {} is listed twice, as {} and {}. Expected each task to have "
                   "its own host:port",
                   src, shown(a), previous->second, field);
      addresses.push_back(a.get<std::string>());
    }
  }
  OSPREY_CHECK(spec.num_tasks("chief") + spec.num_tasks("worker") > 0,
               "{}: the cluster lists no chief or worker. Expected at least one task to train. "
               "Received: cluster={}",
               src, shown(*it));
  return spec;
}

}  // namespace

int ClusterSpec::num_tasks(const std::string& job) const {
  const auto it = jobs.find(job);
  return it == jobs.end() ? 0 : static_cast<int>(it->second.size());
}

const std::string& ClusterSpec::task_address(const std::string& job, int index) const {
  OSPREY_CHECK(index >= 0 && index < num_tasks(job),
               "ClusterSpec: no task {}[{}]. Expected an index from 0 to {}. Received: index={}",
               job, index, num_tasks(job) - 1, index);
  return jobs.at(job)[static_cast<size_t>(index)];
}

ClusterResolver ClusterResolver::from_json(std::string_view text, std::string source) {
  const std::string& src = source;
  json config;
  try {
    config = json::parse(text.begin(), text.end());
  } catch (const json::parse_error& e) {
    const std::string what = e.what();
    const size_t detail = what.find("] ");  // drop nlohmann's "[json.exception.parse_error.101]"
    OSPREY_THROW(ValueError, "{} is not valid JSON (byte {}): {}", src, e.byte,
                 detail == std::string::npos ? what : what.substr(detail + 2));
  }
  OSPREY_CHECK(config.is_object(),
               "{} must be a JSON object with \"cluster\" and \"task\". Received: {}", src,
               shown(config));
  ClusterResolver r;
  r.spec_ = parse_cluster(config, src);
  const auto task = config.find("task");
  OSPREY_CHECK(task != config.end() && task->is_object(),
               "{}: \"task\" must be an object such as {{\"type\": \"worker\", \"index\": 0}}. "
               "Received: {}",
               src, task == config.end() ? "no task" : "task=" + shown(*task));
  const auto type = task->find("type");
  OSPREY_CHECK(
      type != task->end() && type->is_string() && known_job(type->get_ref<const std::string&>()),
      "{}: task.type must be one of {}. Received: {}", src, kJobList,
      type == task->end() ? "no task.type" : "task.type=" + shown(*type));
  r.task_type_ = type->get<std::string>();
  const auto index = task->find("index");
  OSPREY_CHECK(index != task->end() && index->is_number_integer() &&
                   (index->is_number_unsigned() || index->get<std::int64_t>() >= 0),
               "{}: task.index must be a non-negative integer. Received: {}", src,
               index == task->end() ? "no task.index" : "task.index=" + shown(*index));
  const std::uint64_t i = index->get<std::uint64_t>();
  const int n = r.spec_.num_tasks(r.task_type_);
  if (r.task_type_ == "evaluator" && n == 0) {
    // TF's rule: an evaluator may run outside the cluster (there is at most one).
    OSPREY_CHECK(i == 0,
                 "{}: task.index must be 0 for an evaluator outside the cluster (there is at most "
                 "one evaluator). Received: task.index={}",
                 src, i);
  } else {
    std::vector<std::string> jobs;
    for (const auto& [name, addresses] : r.spec_.jobs) jobs.push_back(name);
    OSPREY_CHECK(r.spec_.jobs.count(r.task_type_) > 0,
                 "{}: task.type is not a job of the cluster. Expected one of the cluster's jobs: "
                 "{}. Received: task.type={}",
                 src, fmt::join(jobs, ", "), shown(*type));
    OSPREY_CHECK(i < static_cast<std::uint64_t>(n),
                 "{}: task.index is out of range for {}, which lists {} task{}. Expected an "
                 "index from 0 to {}. Received: task.index={}",
                 src, r.task_type_, n, n == 1 ? "" : "s", n - 1, i);
  }
  r.source_ = std::move(source);
  r.task_index_ = static_cast<int>(i);
  const int chiefs = r.spec_.num_tasks("chief");
  r.num_workers_ = chiefs + r.spec_.num_tasks("worker");
  r.worker_rank_ = r.task_type_ == "chief"    ? 0
                   : r.task_type_ == "worker" ? chiefs + r.task_index_
                                              : -1;
  if (r.in_collective_group()) {  // local rank: the group's entries on this task's host
    const std::string address = r.task_address();
    const std::string_view host = host_of(address);
    r.local_size_ = 0;
    for (int rank = 0; rank < r.num_workers_; ++rank) {
      if (host_of(group_address(r.spec_, rank)) != host) continue;
      if (rank < r.worker_rank_) ++r.local_rank_;
      ++r.local_size_;
    }
  }
  return r;
}

ClusterResolver ClusterResolver::from_cluster_spec(std::string_view text) {
  const std::string src = "CLUSTER_SPEC";
  json spec;
  try {
    spec = json::parse(text.begin(), text.end());
  } catch (const json::parse_error&) {
    return from_json(text, src);  // the same message for malformed JSON
  }
  OSPREY_CHECK(spec.is_object(),
               "{} must be a JSON object with \"cluster\" and \"task\". Received: {}", src,
               shown(spec));
  // Vertex AI's worker pools, in order: the primary replica, workers, parameter servers, an
  // evaluator (its distributed-training page); TF_CONFIG names the same tasks by job.
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 4> kPools = {
      {{"workerpool0", "chief"},
       {"workerpool1", "worker"},
       {"workerpool2", "ps"},
       {"workerpool3", "evaluator"}}};
  const auto job_of = [&](const std::string& pool, const std::string& field,
                          const json& value) -> std::string {
    for (const auto& [p, job] : kPools) {
      if (p == pool) return std::string(job);
    }
    OSPREY_THROW(ValueError,
                 "{}: unknown worker pool. Expected workerpool0 (chief), workerpool1 (worker), "
                 "workerpool2 (ps) or workerpool3 (evaluator). Received: {}={}",
                 src, field, shown(value));
  };
  json config = json::object();
  if (spec.contains("task")) config["task"] = spec["task"];
  if (const auto cluster = spec.find("cluster"); cluster != spec.end() && cluster->is_object()) {
    config["cluster"] = json::object();
    for (const auto& pool : cluster->items()) {
      config["cluster"][job_of(pool.key(), "cluster." + pool.key(), pool.value())] = pool.value();
    }
  } else if (cluster != spec.end()) {
    config["cluster"] = *cluster;  // from_json names what is wrong with it
  }
  if (const auto task = config.find("task"); task != config.end() && task->is_object() &&
                                             task->contains("type") &&
                                             (*task)["type"].is_string()) {
    json& type = (*task)["type"];
    type = job_of(type.get<std::string>(), "task.type", type);
  }
  return from_json(config.dump(), src);
}

ClusterResolver ClusterResolver::from_environment() {
  return from_environment([](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    return v ? std::optional<std::string>(v) : std::nullopt;
  });
}

ClusterResolver ClusterResolver::from_environment(const EnvLookup& env) {
  const char* var = get(env, "OSPREY_CONFIG") ? "OSPREY_CONFIG"
                    : get(env, "TF_CONFIG")   ? "TF_CONFIG"
                                              : "CLUSTER_SPEC";
  const std::optional<std::string> text = get(env, var);
  const std::optional<Launcher> l = read_launcher(env);
  ClusterResolver r;
  if (text) {
    r = std::string_view(var) == "CLUSTER_SPEC" ? from_cluster_spec(*text) : from_json(*text, var);
    if (l && r.in_collective_group()) {  // ps and evaluator tasks are outside the launcher's world
      OSPREY_CHECK(l->size == r.num_workers_,
                   "{} lists {} workers (chief and worker) but {} started {} processes. Expected "
                   "{}={}. Received: {}={}",
                   var, r.num_workers_, l->vars->name, l->size, l->vars->size, r.num_workers_,
                   l->vars->size, l->size);
      OSPREY_CHECK(l->rank == r.worker_rank_,
                   "{} makes this task ({}[{}]) rank {} of the group (chief, then workers) but {} "
                   "gave it rank {}. Expected {}={}. Received: {}={}",
                   var, r.task_type_, r.task_index_, r.worker_rank_, l->vars->name, l->rank,
                   l->vars->rank, r.worker_rank_, l->vars->rank, l->rank);
    }
  } else if (l) {  // every process is a worker; the launcher gives no addresses
    r.source_ = l->vars->name;
    r.task_index_ = r.worker_rank_ = l->rank;
    r.num_workers_ = l->size;
    r.spec_.jobs["worker"].assign(static_cast<size_t>(l->size), "");
  } else {
    r.source_ = "default";
    r.spec_.jobs["worker"] = {""};
  }
  if (l && l->local_rank && l->local_size) {
    r.local_rank_ = *l->local_rank;
    r.local_size_ = *l->local_size;
  }
  return r;
}

std::string ClusterResolver::chief_address() const {
  return num_workers_ > 0 ? group_address(spec_, 0) : std::string();
}

std::string ClusterResolver::task_address() const {
  return task_index_ < spec_.num_tasks(task_type_) ? spec_.task_address(task_type_, task_index_)
                                                   : std::string();
}

std::string ClusterResolver::describe() const {
  std::string out =
      source_ == "default"
          ? "default (no OSPREY_CONFIG, TF_CONFIG, CLUSTER_SPEC, Open MPI or Slurm variables)"
          : source_;
  out += fmt::format(", task {}[{}]", task_type_, task_index_);
  out += in_collective_group()
             ? fmt::format(", rank {} of {}{}", worker_rank_, num_workers_,
                           is_chief() ? " (chief)" : "")
             : fmt::format(", outside the all-reduce group of {} workers", num_workers_);
  out += fmt::format(", local rank {} of {}", local_rank_, local_size_);
  for (const std::string_view job : kJobs) {
    const auto it = spec_.jobs.find(std::string(job));
    if (it == spec_.jobs.end() || it->second.empty() || it->second.front().empty()) continue;
    out += fmt::format("\n  {}: {}", job, fmt::join(it->second, ", "));
  }
  return out;
}

}  // namespace osprey::distribute
