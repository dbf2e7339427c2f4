#include "osprey/autograd/ops/embedding.h"

#include "osprey/autograd/ops/common.h"

namespace osprey::autograd {

Variable embedding(const Variable& table, const Tensor& indices) {
  detail::check_input(table, "embedding", "table");
  check_defined(indices, "embedding", "indices");
  const Tensor& tv = table.value();
  check_same_device({&tv, &indices}, "embedding");
  OSPREY_CHECK(tv.ndim() == 2, "embedding: the table must be 2-D [V, D]. Received: {}",
               tv.shape().to_string());
  OSPREY_CHECK(indices.dtype() == DType::int32 || indices.dtype() == DType::int64,
               "embedding: indices must be int32 or int64. Received: {}", indices.describe());
  const int64_t n = indices.numel(), d = tv.size(1);
  Tensor rows = Tensor::empty({n, d}, {tv.dtype(), tv.device()});
  const Backend& backend = backend_for(tv.device());
  if (n > 0) backend.gather_rows(tv, indices, rows);
  Shape out = indices.shape();
  out.push_back(d);
  Tensor y = rows.view(out);
  if (!should_record(table)) return Variable(std::move(y));
  return make_variable(
      std::move(y), "embedding", {table},
      [indices, ts = tv.shape(), n, d, dt = tv.dtype()](const Tensor& g, const std::vector<bool>&) {
        Tensor dtable = zeros(ts, {dt, g.device()});
        if (n > 0) {
          const Tensor g2 = (g.dtype() == dt ? g : g.to(dt)).reshape({n, d});
          backend_for(g.device()).scatter_add_rows(g2, indices, dtable);
        }
        return std::vector<Tensor>{dtable};
      });
}

}  // namespace osprey::autograd
