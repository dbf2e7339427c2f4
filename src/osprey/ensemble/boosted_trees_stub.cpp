// The build without XGBoost (OSPREY_WITH_XGBOOST off): the API compiles and links, fit and load
// say how to get the real thing, and a BoostedTrees can only ever be empty.
#include "osprey/core/error.h"
#include "osprey/ensemble/boosted_trees.h"

namespace osprey::ensemble {
namespace {
[[noreturn]] void not_built() {
  throw NotImplementedError(
      "osprey was built without XGBoost: install libxgboost-dev (scripts/setup.sh does) and "
      "rebuild with -DOSPREY_WITH_XGBOOST=ON");
}
}  // namespace

struct BoostedTrees::Impl {};

bool xgboost_built() noexcept { return false; }

BoostedTrees::BoostedTrees() = default;
BoostedTrees::BoostedTrees(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
BoostedTrees::BoostedTrees(BoostedTrees&& other) noexcept = default;
BoostedTrees& BoostedTrees::operator=(BoostedTrees&& other) noexcept = default;
BoostedTrees::~BoostedTrees() = default;

const BoostedTrees::Impl& BoostedTrees::impl(const char* op) const {
  OSPREY_CHECK(impl_ != nullptr,
               "{}: the model is empty (default-constructed or moved from). Expected a model "
               "from BoostedTrees::fit or BoostedTrees::load",
               op);
  return *impl_;
}

int BoostedTrees::num_classes() const {
  impl("BoostedTrees.num_classes");
  return 0;
}
int64_t BoostedTrees::num_features() const {
  impl("BoostedTrees.num_features");
  return 0;
}
int BoostedTrees::best_iteration() const {
  impl("BoostedTrees.best_iteration");
  return -1;
}

BoostedTrees BoostedTrees::fit(const Tensor& /*x*/, const Tensor& /*y*/, int /*num_classes*/,
                               const BoostedTreesOptions& /*options*/, const Tensor* /*x_val*/,
                               const Tensor* /*y_val*/) {
  not_built();
}

Tensor BoostedTrees::predict_proba(const Tensor& /*x*/) const {
  impl("BoostedTrees.predict_proba");
  not_built();
}

void BoostedTrees::save(const std::filesystem::path& /*json_file*/) const {
  impl("BoostedTrees.save");
  not_built();
}

BoostedTrees BoostedTrees::load(const std::filesystem::path& /*json_file*/) { not_built(); }

}  // namespace osprey::ensemble
