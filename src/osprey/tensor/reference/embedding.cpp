// Reference row gather (embedding lookup) and its adjoint, the row scatter-add. The table is
// [V, D]; indices of any shape are read flattened, so out and grad are [indices.numel(), D]
// (or any shape with those elements in that order).

#include "osprey/tensor/reference/indexing.h"
#include "osprey/tensor/reference/kernels.h"

namespace osprey::reference {

namespace {

// Reads the indices flattened and checks each against the table's row count.
std::vector<int64_t> checked_indices(const Tensor& indices, int64_t rows, const char* op) {
  std::vector<int64_t> idx;
  idx.reserve(static_cast<size_t>(indices.numel()));
  for (const double v : detail::to_doubles(indices)) {
    const int64_t i = detail::to_index(v);
    OSPREY_CHECK(i >= 0 && i < rows,
                 "{}: index {} at position {} is out of range for a table of {} rows "
                 "(expected 0 <= index < {})",
                 op, i, idx.size(), rows, rows);
    idx.push_back(i);
  }
  return idx;
}

}  // namespace

// out[i, :] = table[indices[i], :]
void gather_rows(const Tensor& table, const Tensor& indices, Tensor& out) {
  OSPREY_ASSERT(table.ndim() == 2, "reference::gather_rows: table must be [V, D], got {}",
                table.describe());
  const int64_t rows = table.shape()[0], dim = table.shape()[1];
  const std::vector<int64_t> idx = checked_indices(indices, rows, "gather_rows");
  OSPREY_ASSERT(out.numel() == static_cast<int64_t>(idx.size()) * dim,
                "reference::gather_rows: out {} for {} indices of dimension {}", out.describe(),
                idx.size(), dim);
  const std::vector<double> tv = detail::to_doubles(table);
  std::vector<double> ov(static_cast<size_t>(out.numel()));
  for (size_t i = 0; i < idx.size(); ++i) {
    for (int64_t d = 0; d < dim; ++d) ov[i * dim + d] = tv[idx[i] * dim + d];
  }
  detail::from_doubles(ov, out);
}

// dtable[indices[i], :] += grad[i, :], summed in double (repeated indices add up) on top of
// whatever dtable holds.
void scatter_add_rows(const Tensor& grad, const Tensor& indices, Tensor& dtable) {
  OSPREY_ASSERT(dtable.ndim() == 2, "reference::scatter_add_rows: dtable must be [V, D], got {}",
                dtable.describe());
  const int64_t rows = dtable.shape()[0], dim = dtable.shape()[1];
  const std::vector<int64_t> idx = checked_indices(indices, rows, "scatter_add_rows");
  OSPREY_ASSERT(grad.numel() == static_cast<int64_t>(idx.size()) * dim,
                "reference::scatter_add_rows: grad {} for {} indices of dimension {}",
                grad.describe(), idx.size(), dim);
  const std::vector<double> gv = detail::to_doubles(grad);
  std::vector<double> tv = detail::to_doubles(dtable);
  for (size_t i = 0; i < idx.size(); ++i) {
    for (int64_t d = 0; d < dim; ++d) tv[idx[i] * dim + d] += gv[i * dim + d];
  }
  detail::from_doubles(tv, dtable);
}

}  // namespace osprey::reference
