// CPU kernel of fusesample::split_by_type (contract: ../split_by_type.cpp):
// the same three passes as the CUDA kernel (type starts, nodes, edges), each
// a parallel loop, with every value checked.
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/full.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <algorithm>
#include <vector>

#include "../split_by_type_common.h"

namespace fusesample {
namespace {

constexpr int64_t kGrain = 1 << 14;

// starts[t] = first position of type t in the sorted `type` (t = 0..T), after
// checking that the types are sorted and below T.
template <typename key_t>
std::vector<int64_t> type_starts(const char* name, const at::Tensor& type,
                                 int64_t num_types) {
  const key_t* key = type.data_ptr<key_t>();
  const int64_t n = type.numel();
  for (int64_t i = 0; i < n; ++i) {
    TORCH_CHECK(static_cast<int64_t>(key[i]) >= 0 && key[i] < num_types, kSplitByTypeOp, ": '", name,
                "' holds type ", static_cast<int64_t>(key[i]), " at ", i,
                " but must lie in [0, ", num_types, ")");
    TORCH_CHECK(i == 0 || key[i - 1] <= key[i], kSplitByTypeOp, ": '", name,
                "' must be sorted (the types in the order that groups them)");
  }
  std::vector<int64_t> starts(num_types + 1);
  for (int64_t t = 0; t <= num_types; ++t)
    starts[t] = std::lower_bound(key, key + n, static_cast<int64_t>(t),
                                 [](key_t a, int64_t b) { return a < b; }) - key;
  return starts;
}

void check_position(const char* name, int64_t value, int64_t bound) {
  TORCH_CHECK(value >= 0 && value < bound, kSplitByTypeOp, ": '", name,
              "' holds ", value, " but must lie in [0, ", bound, ")");
}

template <typename node_key_t, typename edge_key_t>
std::tuple<at::Tensor, at::Tensor, at::Tensor> split(
    const at::Tensor& node, const at::Tensor& node_order, const at::Tensor& node_type,
    const at::Tensor& node_offset, const at::Tensor& row, const at::Tensor& col,
    const at::Tensor& edge, const at::Tensor& edge_order, const at::Tensor& edge_type,
    const at::Tensor& edge_offset) {
  const int64_t N = node.numel(), E = edge.numel();
  const int64_t NT = node_offset.numel() - 1, T = edge_offset.numel() - 1;
  const auto nstart = type_starts<node_key_t>("node_type", node_type, NT);
  const auto estart = type_starts<edge_key_t>("edge_type", edge_type, T);
  const int64_t* nid = node.data_ptr<int64_t>();
  const int64_t* norder = node_order.data_ptr<int64_t>();
  const node_key_t* nkey = node_type.data_ptr<node_key_t>();
  const int64_t* noff = node_offset.data_ptr<int64_t>();
  auto node_local = at::empty({N}, node.options());
  // Each sampled node's position in its type's list, by sample position.
  auto position = at::full({N}, -1, node.options());
  int64_t* nl = node_local.data_ptr<int64_t>();
  int64_t* pos = position.data_ptr<int64_t>();
  at::parallel_for(0, N, kGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t j = norder[i];
      check_position("node_order", j, N);
      nl[i] = nid[j] - noff[nkey[i]];
      pos[j] = i - nstart[nkey[i]];
    }
  });
  const int64_t* r = row.data_ptr<int64_t>();
  const int64_t* c = col.data_ptr<int64_t>();
  const int64_t* eid = edge.data_ptr<int64_t>();
  const int64_t* eorder = edge_order.data_ptr<int64_t>();
  const edge_key_t* ekey = edge_type.data_ptr<edge_key_t>();
  const int64_t* eoff = edge_offset.data_ptr<int64_t>();
  auto edge_index = at::empty({2 * E}, node.options());
  auto edge_local = at::empty({E}, node.options());
  int64_t* ei = edge_index.data_ptr<int64_t>();
  int64_t* el = edge_local.data_ptr<int64_t>();
  at::parallel_for(0, E, kGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t j = eorder[i];
      check_position("edge_order", j, E);
      check_position("row", r[j], N);
      check_position("col", c[j], N);
      const int64_t s = estart[ekey[i]], n = estart[ekey[i] + 1] - s;
      ei[2 * s + (i - s)] = pos[r[j]];
      ei[2 * s + n + (i - s)] = pos[c[j]];
      el[i] = eid[j] - eoff[ekey[i]];
    }
  });
  return {node_local, edge_index, edge_local};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> split_by_type_cpu(
    const at::Tensor& node, const at::Tensor& node_order, const at::Tensor& node_type,
    const at::Tensor& node_offset, const at::Tensor& row, const at::Tensor& col,
    const at::Tensor& edge, const at::Tensor& edge_order, const at::Tensor& edge_type,
    const at::Tensor& edge_offset) {
  check_split_by_type(node, node_order, node_type, node_offset, row, col, edge,
                      edge_order, edge_type, edge_offset);
  const auto args = std::make_tuple(
      node.contiguous(), node_order.contiguous(), node_type.contiguous(),
      node_offset.contiguous(), row.contiguous(), col.contiguous(), edge.contiguous(),
      edge_order.contiguous(), edge_type.contiguous(), edge_offset.contiguous());
  const bool node_bytes = node_type.scalar_type() == at::kByte;
  const bool edge_bytes = edge_type.scalar_type() == at::kByte;
  if (node_bytes && edge_bytes) return std::apply(split<uint8_t, uint8_t>, args);
  if (node_bytes) return std::apply(split<uint8_t, int32_t>, args);
  if (edge_bytes) return std::apply(split<int32_t, uint8_t>, args);
  return std::apply(split<int32_t, int32_t>, args);
}

}  // namespace

TORCH_LIBRARY_IMPL(fusesample, CPU, m) {
  m.impl("split_by_type", &split_by_type_cpu);
}

}  // namespace fusesample
