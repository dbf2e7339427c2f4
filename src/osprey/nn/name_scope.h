// Layer names: unique_name() gives each unnamed layer "dense", "dense_1", ... per base name, as
// Keras. NameScope is Keras's clear_session() discipline without clearing anyone else's names:
// while one lives, the layers made on its thread count from a fresh set of counters, so two
// builds of one architecture, each in its own scope, name their weights with the same paths and
// a checkpoint of one loads into the other by path. The tuner opens one around every build.
//   { nn::NameScope scope; a = build(hp); }   // sequential/dense/kernel, ...
//   { nn::NameScope scope; b = build(hp); }   // the same paths
#pragma once

#include <map>
#include <string>

namespace osprey::nn {

class NameScope {
 public:
  NameScope();
  ~NameScope();
  NameScope(const NameScope&) = delete;
  NameScope& operator=(const NameScope&) = delete;

 private:
  friend std::string unique_name(const std::string& base);
  friend void clear_session();

  std::map<std::string, int> counters_;
  NameScope* outer_;  // the scope this one hides, restored when it ends
};

// "dense", then "dense_1", ...: counted in the innermost NameScope of this thread, else in the
// process-wide counters.
std::string unique_name(const std::string& base);
// Resets the counters unique_name() uses now (the innermost scope's, else the process-wide ones).
void clear_session();

}  // namespace osprey::nn
