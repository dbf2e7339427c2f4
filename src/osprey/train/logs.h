// Logs: the named values of one step or epoch ("loss", "accuracy", "val_loss", ...) in the order
// they were first set, as Keras passes them to callbacks and prints them.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace osprey::train {

class Logs {
 public:
  void set(const std::string& key, double value);
  std::optional<double> get(const std::string& key) const;
  double at(const std::string& key) const;  // ValueError naming the key and the known keys
  bool contains(const std::string& key) const { return get(key).has_value(); }
  const std::vector<std::pair<std::string, double>>& items() const { return items_; }
  bool empty() const { return items_.empty(); }
  // " - loss: 0.4210 - accuracy: 0.8512"
  std::string format() const;

 private:
  std::vector<std::pair<std::string, double>> items_;
};

}  // namespace osprey::train
