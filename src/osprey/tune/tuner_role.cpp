// tuner_role_from_env (oracle_service.h): built with or without gRPC, so a build without it can
// still tell a user that their distributed-tuning settings need it.
#include <charconv>
#include <cstdlib>

#include "osprey/tune/oracle_service.h"

namespace osprey::tune {

namespace {

// The value of `name`, else of its KerasTuner twin; "" when neither is set. Sets *which to the
// variable read, for messages.
std::string env_either(const char* name, const char* keras_name, std::string* which) {
  for (const char* n : {name, keras_name}) {
    const char* v = std::getenv(n);
    if (v != nullptr && *v != '\0') {
      *which = n;
      return v;
    }
  }
  *which = name;
  return "";
}

}  // namespace

TunerRole tuner_role_from_env() {
  std::string id_var, ip_var, port_var;
  TunerRole role;
  role.tuner_id = env_either("OSPREY_TUNER_ID", "KERASTUNER_TUNER_ID", &id_var);
  const std::string ip = env_either("OSPREY_ORACLE_IP", "KERASTUNER_ORACLE_IP", &ip_var);
  const std::string port = env_either("OSPREY_ORACLE_PORT", "KERASTUNER_ORACLE_PORT", &port_var);
  if (const char* t = std::getenv("OSPREY_ORACLE_TOKEN")) role.token = t;
  if (ip.empty() && port.empty()) return role;
  OSPREY_CHECK(!ip.empty() && !port.empty(),
               "distributed tuning: {} is set but {} is not; set both (the chief's address) or "
               "neither",
               ip.empty() ? port_var : ip_var, ip.empty() ? ip_var : port_var);
  int p = 0;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), p);
  OSPREY_CHECK(ec == std::errc() && end == port.data() + port.size() && p >= 1 && p <= 65535,
               "distributed tuning: {} must be a port number in 1-65535. Received: '{}'", port_var,
               port);
  OSPREY_CHECK(!role.tuner_id.empty(),
               "distributed tuning: {} is set but OSPREY_TUNER_ID is not: set it to \"chief\" for "
               "the process that serves the oracle, or to a worker's id (tuner0, tuner1, ...)",
               ip_var);
  role.oracle_address =
      ip.find(':') != std::string::npos && ip.front() != '['  // a bare IPv6 address
          ? fmt::format("[{}]:{}", ip, p)
          : fmt::format("{}:{}", ip, p);
  return role;
}

OracleServiceOptions chief_service_options(const TunerRole& role, bool verbose) {
  OracleServiceOptions o{.listen = role.oracle_address, .token = role.token, .verbose = verbose};
  const char* v = std::getenv("OSPREY_ORACLE_LEASE_SECONDS");
  if (v != nullptr && *v != '\0') {
    char* end = nullptr;
    o.lease_seconds = std::strtod(v, &end);
    OSPREY_CHECK(*end == '\0' && o.lease_seconds > 0,
                 "OSPREY_ORACLE_LEASE_SECONDS must be a positive number of seconds. Received: '{}'",
                 v);
  }
  return o;
}

bool restarted_by_launcher() {
  const char* v = std::getenv("OSPREY_TUNER_RESTARTED");
  return v != nullptr && std::string_view(v) == "1";
}

}  // namespace osprey::tune
