// CPU kernel of fusesample::induced_subgraph (contract: ../induced_subgraph.cpp).
// Two parallel passes over the nodes' in-edge lists: count the kept edges per
// target, then write them at prefix-summed offsets. The map from global to
// local ids (a dense table or a hash map, by the length of the scan) is
// built once and only read by the parallel passes.
#include <ATen/core/Tensor.h>
#include <ATen/Dispatch.h>
#include <ATen/ops/empty.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <numeric>
#include <vector>

#include "../../common/checks.h"
#include "../../common/node_map.h"

namespace fusesample {
namespace {

constexpr const char* kOp = "fusesample::induced_subgraph";

// The two passes, reading local ids through `local_of(global)` (-1: not
// in the subgraph), which parallel threads may call concurrently.
template <typename index_t, typename LocalOf>
std::tuple<at::Tensor, at::Tensor, at::Tensor> induce_with(
    const int64_t* colptr_p, const index_t* row_p, const int64_t* eid_p,
    const int64_t* node_p, int64_t n, const LocalOf& local_of) {
  std::vector<int64_t> offsets(n + 1, 0);
  at::parallel_for(0, n, 1024, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      int64_t kept = 0;
      for (int64_t e = colptr_p[node_p[i]]; e < colptr_p[node_p[i] + 1]; ++e)
        kept += local_of(static_cast<int64_t>(row_p[e])) >= 0;
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
        const int64_t local = local_of(static_cast<int64_t>(row_p[e]));
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

template <typename index_t>
std::tuple<at::Tensor, at::Tensor, at::Tensor> induce(
    const at::Tensor& colptr, const at::Tensor& row,
    const c10::optional<at::Tensor>& edge_id, const at::Tensor& node) {
  const int64_t n = node.numel();
  const int64_t num_nodes = colptr.numel() - 1;
  const int64_t* colptr_p = colptr.data_ptr<int64_t>();
  const index_t* row_p = row.data_ptr<index_t>();
  const int64_t* eid_p = edge_id.has_value() ? edge_id->data_ptr<int64_t>() : nullptr;
  const int64_t* node_p = node.data_ptr<int64_t>();

  // The in-edges the passes scan (each twice): on power-law graphs the
  // nodes of random walks are hub-heavy, so this is often far more than
  // the nodes. A dense table of local ids over all nodes is then cheaper
  // than a hash probe per edge (GraphSAINT, products-like at scale 0.05:
  // 149 ms a batch with the hash map); for a short scan the table's
  // initialisation is not worth it.
  int64_t scan = 0;
  for (int64_t i = 0; i < n; ++i)
    scan += colptr_p[node_p[i] + 1] - colptr_p[node_p[i]];
  if (num_nodes <= 8 * scan && num_nodes < (int64_t{1} << 31)) {
    std::vector<int32_t> local(num_nodes, -1);
    for (int64_t i = 0; i < n; ++i) {
      TORCH_CHECK(local[node_p[i]] < 0, kOp,
                  ": 'node' must hold unique ids; ", node_p[i], " repeats");
      local[node_p[i]] = static_cast<int32_t>(i);
    }
    const int32_t* table = local.data();
    return induce_with(colptr_p, row_p, eid_p, node_p, n,
                       [table](int64_t v) { return int64_t{table[v]}; });
  }
  NodeMap map(n);
  for (int64_t i = 0; i < n; ++i)
    TORCH_CHECK(map.insert(node_p[i], i).second, kOp,
                ": 'node' must hold unique ids; ", node_p[i], " repeats");
  return induce_with(colptr_p, row_p, eid_p, node_p, n,
                     [&map](int64_t v) { return map.find(v); });
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> induced_subgraph_cpu(
    const at::Tensor& colptr, const at::Tensor& row,
    const c10::optional<at::Tensor>& edge_id, const at::Tensor& node) {
  check_csc(kOp, colptr, row, edge_id);
  check_node_ids(kOp, "node", node, colptr);
  check_ids_in_range_cpu(kOp, "node", node, colptr.numel() - 1);
  check_compressed_values_cpu(kOp, "colptr", colptr, "row", row,
                              colptr.numel() - 1);
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
