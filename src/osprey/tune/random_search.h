// RandomSearchOracle: every trial draws each active hyperparameter independently from its
// distribution (uniform, log-uniform, over a grid or the choices), skipping values already
// tried; the search stops early when 100 draws in a row collide (the space is exhausted).
#pragma once

#include "osprey/tune/oracle.h"

namespace osprey::tune {

class RandomSearchOracle : public Oracle {
 public:
  explicit RandomSearchOracle(OracleOptions options) : Oracle(std::move(options)) {}
  const char* class_name() const override { return "RandomSearch"; }

 protected:
  Proposal populate_space(const std::string& trial_id) override;
};

}  // namespace osprey::tune
