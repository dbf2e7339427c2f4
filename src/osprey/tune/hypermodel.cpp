#include "osprey/tune/hypermodel.h"

namespace osprey::tune {

train::History TrainData::fit(Model& model, const train::FitOptions& options) const {
  if (dataset) return model.fit(*dataset, options);
  return model.fit(x, y, options);
}

Shape TrainData::sample_shape() const {
  if (dataset || !x.defined()) return {};
  Shape s = x.shape();
  s.erase(0);
  return s;
}

}  // namespace osprey::tune
