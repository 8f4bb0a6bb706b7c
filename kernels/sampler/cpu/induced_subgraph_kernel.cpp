// CPU kernel of fusesample::induced_subgraph (contract: ../induced_subgraph.cpp).
// Two parallel passes over the nodes' in-edge lists: count the kept edges per
// target, then write them at prefix-summed offsets. The map from global to
// local ids is built once and only read by the parallel passes.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <numeric>
#include <vector>

#include "../../common/checks.h"
#include "../../common/node_map.h"

namespace fusesample {
namespace {

constexpr const char* kOp = "fusesample::induced_subgraph";

template <typename index_t>
std::tuple<at::Tensor, at::Tensor, at::Tensor> induce(
    const at::Tensor& colptr, const at::Tensor& row,
    const c10::optional<at::Tensor>& edge_id, const at::Tensor& node) {
  const int64_t n = node.numel();
  const int64_t* colptr_p = colptr.data_ptr<int64_t>();
  const index_t* row_p = row.data_ptr<index_t>();
  const int64_t* eid_p = edge_id.has_value() ? edge_id->data_ptr<int64_t>() : nullptr;
  const int64_t* node_p = node.data_ptr<int64_t>();

  NodeMap map(n);
  for (int64_t i = 0; i < n; ++i)
    TORCH_CHECK(map.insert(node_p[i], i).second, kOp,
                ": 'node' must hold unique ids; ", node_p[i], " repeats");

  std::vector<int64_t> offsets(n + 1, 0);
  at::parallel_for(0, n, 1024, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      int64_t kept = 0;
      for (int64_t e = colptr_p[node_p[i]]; e < colptr_p[node_p[i] + 1]; ++e)
        kept += map.find(static_cast<int64_t>(row_p[e])) >= 0;
      offsets[i + 1] = kept;
    }
  });
  std::partial_sum(offsets.begin(), offsets.end(), offsets.begin());

  const int64_t m = offsets[n];
  auto out_row = at::empty({m}, at::kLong);
  auto out_col = at::empty({m}, at::kLong);
  auto out_edge = at::empty({m}, at::kLong);
  int64_t* r = out_row.data_ptr<int64_t>();
  int64_t* c = out_col.data_ptr<int64_t>();
  int64_t* ed = out_edge.data_ptr<int64_t>();
  at::parallel_for(0, n, 1024, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      int64_t out = offsets[i];
      for (int64_t e = colptr_p[node_p[i]]; e < colptr_p[node_p[i] + 1]; ++e) {
        const int64_t local = map.find(static_cast<int64_t>(row_p[e]));
        if (local < 0) continue;
        r[out] = local;
        c[out] = i;
        ed[out] = eid_p ? eid_p[e] : e;
        ++out;
      }
    }
  });
  return std::make_tuple(out_row, out_col, out_edge);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> induced_subgraph_cpu(
    const at::Tensor& colptr, const at::Tensor& row,
    const c10::optional<at::Tensor>& edge_id, const at::Tensor& node) {
  check_csc(kOp, colptr, row, edge_id);
  check_node_ids(kOp, "node", node, colptr);
  check_ids_in_range_cpu(kOp, "node", node, colptr.numel() - 1);
  const auto colptr_c = colptr.contiguous();
  const auto row_c = row.contiguous();
  const auto node_c = node.contiguous();
  c10::optional<at::Tensor> eid_c;
  if (edge_id.has_value()) eid_c = edge_id->contiguous();
  return AT_DISPATCH_INDEX_TYPES(row.scalar_type(), "induced_subgraph_cpu", [&] {
    return induce<index_t>(colptr_c, row_c, eid_c, node_c);
  });
}

}  // namespace

TORCH_LIBRARY_IMPL(fusesample, CPU, m) {
  m.impl("induced_subgraph", &induced_subgraph_cpu);
}

}  // namespace fusesample
