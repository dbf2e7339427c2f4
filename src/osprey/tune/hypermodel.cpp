#include "osprey/tune/hypermodel.h"

namespace osprey::tune {

train::History TrainData::fit(Model& model, const train::FitOptions& options) const {
  if (dataset) return model.fit(*dataset, options);
  return model.fit(x, y, options);
}

}  // namespace osprey::tune
