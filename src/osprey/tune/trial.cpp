#include "osprey/tune/trial.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>

#include "osprey/core/error.h"

namespace osprey::tune {

const char* status_name(TrialStatus s) {
  switch (s) {
    case TrialStatus::running:
      return "running";
    case TrialStatus::idle:
      return "idle";
    case TrialStatus::completed:
      return "completed";
    case TrialStatus::failed:
      return "failed";
    case TrialStatus::invalid:
      return "invalid";
    case TrialStatus::stopped:
      return "stopped";
  }
  return "?";
}

TrialStatus parse_status(const std::string& s, const std::string& where) {
  for (TrialStatus t : {TrialStatus::running, TrialStatus::idle, TrialStatus::completed,
                        TrialStatus::failed, TrialStatus::invalid, TrialStatus::stopped}) {
    if (s == status_name(t)) return t;
  }
  OSPREY_THROW(ValueError, "{}: unknown trial status '{}'", where, s);
}

bool Trial::compute_score(const Objective& objective) {
  double sum = 0;
  double step_sum = 0;
  int counted = 0;
  std::map<std::string, double> metric_sum;
  std::map<std::string, int> metric_count;
  for (const auto& execution : executions) {
    const EpochRecord* best = nullptr;
    double best_value = objective.worst();
    for (const EpochRecord& r : execution) {
      for (const auto& [k, v] : r.metrics) {
        if (k == objective.name() && std::isfinite(v) &&
            (best == nullptr || objective.better(v, best_value))) {
          best = &r;
          best_value = v;
        }
      }
    }
    if (best == nullptr) continue;
    sum += best_value;
    step_sum += best->epoch;
    ++counted;
    for (const auto& [k, v] : best->metrics) {
      metric_sum[k] += v;
      metric_count[k] += 1;
    }
  }
  if (counted == 0) return false;
  score = sum / counted;
  best_step = static_cast<int>(std::lround(step_sum / counted));
  metrics.clear();
  for (const auto& [k, v] : metric_sum) metrics[k] = v / metric_count[k];
  return true;
}

nlohmann::json Trial::to_json() const {
  nlohmann::json execs = nlohmann::json::array();
  for (const auto& e : executions) {
    nlohmann::json epochs = nlohmann::json::array();
    for (const EpochRecord& r : e) {
      nlohmann::json m = nlohmann::json::object();
      for (const auto& [k, v] : r.metrics)
        m[k] = std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(fmt::format("{}", v));
      epochs.push_back({{"epoch", r.epoch}, {"metrics", m}});
    }
    execs.push_back(epochs);
  }
  nlohmann::json m = nlohmann::json::object();
  for (const auto& [k, v] : metrics) m[k] = v;
  return {{"trial_id", trial_id},
          {"status", status_name(status)},
          {"hyperparameters", hyperparameters.to_json()},
          {"score", score ? nlohmann::json(*score) : nlohmann::json()},
          {"best_step", best_step},
          {"metrics", m},
          {"executions", execs},
          {"message", message}};
}

namespace {
double metric_from_json(const nlohmann::json& v) {
  if (v.is_number()) return v.get<double>();
  // NaN and infinities have no JSON number; they are stored as "nan", "inf", "-inf".
  return std::strtod(v.get<std::string>().c_str(), nullptr);
}
}  // namespace

void check_trial_id(const std::string& id, const std::string& where) {
  const bool ok = !id.empty() && id.size() <= 64 && std::all_of(id.begin(), id.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
  });
  OSPREY_CHECK_T(IoError, ok,
                 "{}: trial id \"{}\" is not 1-64 letters, digits, '_' or '-' (it names the "
                 "trial's folder)",
                 where, id.size() > 80 ? id.substr(0, 80) + "..." : id);
}

int state_int(const nlohmann::json& v, const std::string& where, const char* field) {
  const bool ok =
      v.is_number_integer() &&
      (v.is_number_unsigned() ? v.get<uint64_t>() <= uint64_t{std::numeric_limits<int>::max()}
                              : v.get<int64_t>() >= std::numeric_limits<int>::min() &&
                                    v.get<int64_t>() <= std::numeric_limits<int>::max());
  OSPREY_CHECK_T(IoError, ok, "{}: {} must be an integer within int's range. Received: {}", where,
                 field, v.dump());
  return static_cast<int>(v.get<int64_t>());
}

Trial Trial::from_json(const nlohmann::json& j, const std::string& where) {
  try {
    Trial t;
    t.trial_id = j.at("trial_id").get<std::string>();
    check_trial_id(t.trial_id, where);
    t.status = parse_status(j.at("status").get<std::string>(), where);
    t.hyperparameters = HyperParameters::from_json(j.at("hyperparameters"), where);
    if (!j.at("score").is_null()) t.score = j.at("score").get<double>();
    t.best_step = j.contains("best_step") ? state_int(j["best_step"], where, "best_step") : -1;
    for (const auto& [k, v] : j.at("metrics").items()) t.metrics[k] = metric_from_json(v);
    for (const auto& e : j.at("executions")) {
      std::vector<EpochRecord> records;
      for (const auto& r : e) {
        EpochRecord rec;
        rec.epoch = state_int(r.at("epoch"), where, "epoch");
        for (const auto& [k, v] : r.at("metrics").items())
          rec.metrics.emplace_back(k, metric_from_json(v));
        records.push_back(std::move(rec));
      }
      t.executions.push_back(std::move(records));
    }
    t.message = j.value("message", std::string());
    return t;
  } catch (const nlohmann::json::exception& e) {
    OSPREY_THROW(IoError, "{}: malformed trial: {}", where, e.what());
  }
}

}  // namespace osprey::tune
