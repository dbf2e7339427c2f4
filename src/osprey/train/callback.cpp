#include "osprey/train/callback.h"

#include "osprey/core/error.h"
#include "osprey/train/fit_options.h"

namespace osprey::train {

Model& Callback::model() const {
  OSPREY_CHECK(model_ != nullptr,
               "Callback: model() used before the callback was attached to fit()");
  return *model_;
}

CallbackList::CallbackList(std::vector<CallbackPtr> callbacks, Model* model,
                           const Callback::Params& params)
    : callbacks_(std::move(callbacks)) {
  for (auto& c : callbacks_) {
    OSPREY_CHECK(c != nullptr, "callbacks: received a null callback");
    c->set_model(model);
    c->set_params(params);
  }
}

void History::on_epoch_end(int e, const Logs& logs) {
  epoch.push_back(e);
  for (const auto& [k, v] : logs.items()) history[k].push_back(v);
}

}  // namespace osprey::train
