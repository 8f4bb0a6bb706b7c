// CUDA kernel of fusesample::split_by_type (contract: ../split_by_type.cpp).
// Three launches on the current stream, no host synchronisation:
//   1. each type's first position in the sorted types, by binary search (one
//      thread per type boundary: a handful of threads);
//   2. per node, its local id and its position in its type's list;
//   3. per edge, both endpoints' positions (written into its type's [2, n_t]
//      block) and its local edge id.
// Passes 2 and 3 read the order and the sorted types coalesced and gather the
// ids (the sort moved them); a value out of range gives -1, never a wild read.
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/full.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include <cstdint>

#include "../../common/grid.h"
#include "../split_by_type_common.h"

namespace fusesample {
namespace {

constexpr int kThreads = 256;

// starts[t] = first i with key[i] >= t, t = 0..num_types (key sorted).
template <typename key_t>
__global__ void type_starts_kernel(const key_t* __restrict__ key, int64_t n,
                                   int64_t num_types, int64_t* __restrict__ starts) {
  const int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t > num_types) return;
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (static_cast<int64_t>(key[mid]) < t) lo = mid + 1;
    else hi = mid;
  }
  starts[t] = lo;
}

template <typename key_t>
__global__ void split_nodes_kernel(const int64_t* __restrict__ node,
                                   const int64_t* __restrict__ order,
                                   const key_t* __restrict__ key,
                                   const int64_t* __restrict__ offset,
                                   const int64_t* __restrict__ starts, int64_t n,
                                   int64_t num_types, int64_t* __restrict__ local,
                                   int64_t* __restrict__ position) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < n; i += stride) {
    const int64_t j = order[i];
    const int64_t t = static_cast<int64_t>(key[i]);
    const bool ok = j >= 0 && j < n && t >= 0 && t < num_types;
    local[i] = ok ? node[j] - offset[t] : -1;
    if (ok) position[j] = i - starts[t];
  }
}

template <typename key_t>
__global__ void split_edges_kernel(const int64_t* __restrict__ row,
                                   const int64_t* __restrict__ col,
                                   const int64_t* __restrict__ edge,
                                   const int64_t* __restrict__ order,
                                   const key_t* __restrict__ key,
                                   const int64_t* __restrict__ offset,
                                   const int64_t* __restrict__ starts,
                                   const int64_t* __restrict__ position,
                                   int64_t num_edges, int64_t num_nodes,
                                   int64_t num_types, int64_t* __restrict__ edge_index,
                                   int64_t* __restrict__ local) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < num_edges; i += stride) {
    const int64_t j = order[i];
    const int64_t t = static_cast<int64_t>(key[i]);
    if (!(j >= 0 && j < num_edges && t >= 0 && t < num_types)) {
      local[i] = -1;
      continue;  // its block slot is unknown: nothing to write there
    }
    const int64_t s = starts[t], k = i - s, n = starts[t + 1] - s;
    const int64_t r = row[j], c = col[j];
    edge_index[2 * s + k] = (r >= 0 && r < num_nodes) ? position[r] : -1;
    edge_index[2 * s + n + k] = (c >= 0 && c < num_nodes) ? position[c] : -1;
    local[i] = edge[j] - offset[t];
  }
}

template <typename key_t>
void launch_starts(const at::Tensor& key, int64_t num_types, at::Tensor& starts) {
  const int blocks = static_cast<int>((num_types + 1 + kThreads - 1) / kThreads);
  type_starts_kernel<key_t><<<blocks, kThreads, 0, at::cuda::getCurrentCUDAStream()>>>(
      key.data_ptr<key_t>(), key.numel(), num_types, starts.data_ptr<int64_t>());
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

template <typename key_t>
void launch_nodes(const at::Tensor& node, const at::Tensor& order, const at::Tensor& key,
                  const at::Tensor& offset, const at::Tensor& starts,
                  at::Tensor& local, at::Tensor& position) {
  const int64_t n = node.numel();
  if (n == 0) return;
  split_nodes_kernel<key_t><<<grid_blocks(n, kThreads, 8), kThreads, 0,
                              at::cuda::getCurrentCUDAStream()>>>(
      node.data_ptr<int64_t>(), order.data_ptr<int64_t>(), key.data_ptr<key_t>(),
      offset.data_ptr<int64_t>(), starts.data_ptr<int64_t>(), n, offset.numel() - 1,
      local.data_ptr<int64_t>(), position.data_ptr<int64_t>());
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

template <typename key_t>
void launch_edges(const at::Tensor& row, const at::Tensor& col, const at::Tensor& edge,
                  const at::Tensor& order, const at::Tensor& key,
                  const at::Tensor& offset, const at::Tensor& starts,
                  const at::Tensor& position, at::Tensor& edge_index,
                  at::Tensor& local) {
  const int64_t e = edge.numel();
  if (e == 0) return;
  split_edges_kernel<key_t><<<grid_blocks(e, kThreads, 8), kThreads, 0,
                              at::cuda::getCurrentCUDAStream()>>>(
      row.data_ptr<int64_t>(), col.data_ptr<int64_t>(), edge.data_ptr<int64_t>(),
      order.data_ptr<int64_t>(), key.data_ptr<key_t>(), offset.data_ptr<int64_t>(),
      starts.data_ptr<int64_t>(), position.data_ptr<int64_t>(), e, position.numel(),
      offset.numel() - 1, edge_index.data_ptr<int64_t>(), local.data_ptr<int64_t>());
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> split_by_type_cuda(
    const at::Tensor& node_, const at::Tensor& node_order_, const at::Tensor& node_type_,
    const at::Tensor& node_offset_, const at::Tensor& row_, const at::Tensor& col_,
    const at::Tensor& edge_, const at::Tensor& edge_order_, const at::Tensor& edge_type_,
    const at::Tensor& edge_offset_) {
  check_split_by_type(node_, node_order_, node_type_, node_offset_, row_, col_, edge_,
                      edge_order_, edge_type_, edge_offset_);
  c10::cuda::CUDAGuard guard(node_.device());
  const auto node = node_.contiguous(), node_order = node_order_.contiguous(),
             node_type = node_type_.contiguous(), node_offset = node_offset_.contiguous(),
             row = row_.contiguous(), col = col_.contiguous(), edge = edge_.contiguous(),
             edge_order = edge_order_.contiguous(), edge_type = edge_type_.contiguous(),
             edge_offset = edge_offset_.contiguous();
  const int64_t N = node.numel(), E = edge.numel();
  const int64_t NT = node_offset.numel() - 1, T = edge_offset.numel() - 1;
  // Both types' starts in one allocation: [NT + 1 | T + 1].
  auto starts = at::empty({NT + T + 2}, node.options());
  auto nstart = starts.narrow(0, 0, NT + 1), estart = starts.narrow(0, NT + 1, T + 1);
  auto node_local = at::empty({N}, node.options());
  auto position = at::full({N}, -1, node.options());
  auto edge_index = at::empty({2 * E}, node.options());
  auto edge_local = at::empty({E}, node.options());
  if (node_type.scalar_type() == at::kByte) {
    launch_starts<uint8_t>(node_type, NT, nstart);
    launch_nodes<uint8_t>(node, node_order, node_type, node_offset, nstart, node_local,
                          position);
  } else {
    launch_starts<int32_t>(node_type, NT, nstart);
    launch_nodes<int32_t>(node, node_order, node_type, node_offset, nstart, node_local,
                          position);
  }
  if (edge_type.scalar_type() == at::kByte) {
    launch_starts<uint8_t>(edge_type, T, estart);
    launch_edges<uint8_t>(row, col, edge, edge_order, edge_type, edge_offset, estart,
                          position, edge_index, edge_local);
  } else {
    launch_starts<int32_t>(edge_type, T, estart);
    launch_edges<int32_t>(row, col, edge, edge_order, edge_type, edge_offset, estart,
                          position, edge_index, edge_local);
  }
  return {node_local, edge_index, edge_local};
}

}  // namespace

TORCH_LIBRARY_IMPL(fusesample, CUDA, m) {
  m.impl("split_by_type", &split_by_type_cuda);
}

}  // namespace fusesample
