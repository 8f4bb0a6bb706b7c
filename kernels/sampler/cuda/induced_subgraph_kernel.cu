// CUDA kernel of fusesample::induced_subgraph (contract:
// ../induced_subgraph.cpp). One warp per node walks its in-edge list with
// coalesced reads and keeps the sources found in the node set; a ballot +
// popcount prefix keeps CSC order within a node, so the output equals the
// CPU kernel's. One host sync reads the edge count to size the output.
// 'node' must be unique (the sampler's n_id is); unlike the CPU kernel this
// is not re-checked here, because that would cost a sort.
#include <ATen/core/Tensor.h>
#include <ATen/TensorOperators.h>
#include <ATen/Dispatch.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/full.h>
#include <ATen/ops/zeros.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include <limits>

#include "../../common/checks.h"
#include "sample_phases.cuh"

namespace fusesample {
namespace {

using namespace cuda_sampler;
constexpr const char* kOp = "fusesample::induced_subgraph";

__global__ void insert_nodes_kernel(const int64_t* node, int64_t n,
                                    int64_t num_nodes, HashTable t,
                                    unsigned long long* error) {
  GridRange r;
  for (int64_t i = r.start; i < n; i += r.stride) {
    if (node[i] < 0 || node[i] >= num_nodes) {
      atomicExch(error, 1ULL);
      continue;
    }
    const uint64_t s = table_insert(t, static_cast<unsigned long long>(node[i]));
    atomicMin(&t.value[s], static_cast<long long>(i));
  }
}

__device__ __forceinline__ bool contains(const HashTable& t, unsigned long long key,
                                         long long* value) {
  for (uint64_t i = mix64(key) & t.mask;; i = (i + 1) & t.mask) {
    const unsigned long long k = t.key[i];
    if (k == key) { *value = t.value[i]; return true; }
    if (k == kEmptyKey) return false;
  }
}

// Pass 0 counts kept edges per node into `counts`; pass 1 writes them at
// `offsets` (exclusive prefix sums of the counts).
template <typename index_t, bool kWrite>
__global__ void induce_kernel(const int64_t* colptr, const index_t* row,
                              const int64_t* edge_id, const int64_t* node,
                              int64_t n, int64_t num_nodes, HashTable t,
                              int64_t* counts, const int64_t* offsets,
                              int64_t* out_row, int64_t* out_col,
                              int64_t* out_edge) {
  const int lane = threadIdx.x & 31;
  const int64_t warp = global_warp(), warps = warp_count();
  for (int64_t i = warp; i < n; i += warps) {
    const int64_t v = node[i];
    if (v < 0 || v >= num_nodes) continue;
    int64_t kept = 0;
    for (int64_t e0 = colptr[v]; e0 < colptr[v + 1]; e0 += 32) {
      const int64_t e = e0 + lane;
      long long local = -1;
      const bool hit = e < colptr[v + 1] &&
                       contains(t, static_cast<unsigned long long>(row[e]), &local);
      const unsigned mask = __ballot_sync(0xffffffffu, hit);
      if (kWrite && hit) {
        const int64_t out = offsets[i] + kept + __popc(mask & ((1u << lane) - 1));
        out_row[out] = local;
        out_col[out] = i;
        out_edge[out] = edge_id ? edge_id[e] : e;
      }
      kept += __popc(mask);
    }
    if (!kWrite && lane == 0) counts[i] = kept;
  }
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> induced_subgraph_cuda(
    const at::Tensor& colptr, const at::Tensor& row,
    const c10::optional<at::Tensor>& edge_id, const at::Tensor& node) {
  check_csc(kOp, colptr, row, edge_id);
  check_node_ids(kOp, "node", node, colptr);
  // The kernel follows colptr and row unchecked: their values once per graph.
  check_graph_values(kOp, "colptr", colptr, "row", row, colptr.numel() - 1);
  c10::cuda::CUDAGuard guard(colptr.device());
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  const auto opts = colptr.options();
  const auto colptr_c = colptr.contiguous();
  const auto row_c = row.contiguous();
  const auto node_c = node.contiguous();
  c10::optional<at::Tensor> eid_c;
  if (edge_id.has_value()) eid_c = edge_id->contiguous();
  const int64_t n = node.numel(), num_nodes = colptr.numel() - 1;

  int64_t cap = 1024;
  while (cap < 2 * n) cap <<= 1;
  auto key = at::full({cap}, -1, opts);
  auto value = at::full({cap}, std::numeric_limits<int64_t>::max(), opts);
  const HashTable t{reinterpret_cast<unsigned long long*>(key.data_ptr<int64_t>()),
                    nullptr, reinterpret_cast<long long*>(value.data_ptr<int64_t>()),
                    static_cast<uint64_t>(cap - 1)};
  auto error = at::zeros({1}, opts);
  const int blocks = static_cast<int>(std::min<int64_t>(
      std::max<int64_t>((n * 32 + kThreads - 1) / kThreads, 1), 65535));
  insert_nodes_kernel<<<blocks, kThreads, 0, stream>>>(
      node_c.data_ptr<int64_t>(), n, num_nodes, t,
      reinterpret_cast<unsigned long long*>(error.data_ptr<int64_t>()));
  C10_CUDA_KERNEL_LAUNCH_CHECK();

  auto counts = at::zeros({n}, opts);
  return AT_DISPATCH_INDEX_TYPES(row.scalar_type(), "induced_subgraph_cuda", [&] {
    const int64_t* eid = eid_c.has_value() ? eid_c->data_ptr<int64_t>() : nullptr;
    induce_kernel<index_t, false><<<blocks, kThreads, 0, stream>>>(
        colptr_c.data_ptr<int64_t>(), row_c.data_ptr<index_t>(), eid,
        node_c.data_ptr<int64_t>(), n, num_nodes, t, counts.data_ptr<int64_t>(),
        nullptr, nullptr, nullptr, nullptr);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    auto offsets = counts.cumsum(0) - counts;
    // The one sync: the error flag and the output size, in one copy.
    const auto host = at::cat({error, counts.sum().view({1})}).cpu();
    TORCH_CHECK(host[0].item<int64_t>() == 0, kOp, ": 'node' holds ids outside [0, ",
                num_nodes, ")");
    const int64_t m = host[1].item<int64_t>();
    auto out_row = at::empty({m}, opts), out_col = at::empty({m}, opts),
         out_edge = at::empty({m}, opts);
    if (m > 0) {
      induce_kernel<index_t, true><<<blocks, kThreads, 0, stream>>>(
          colptr_c.data_ptr<int64_t>(), row_c.data_ptr<index_t>(), eid,
          node_c.data_ptr<int64_t>(), n, num_nodes, t, nullptr,
          offsets.data_ptr<int64_t>(), out_row.data_ptr<int64_t>(),
          out_col.data_ptr<int64_t>(), out_edge.data_ptr<int64_t>());
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
    return std::make_tuple(out_row, out_col, out_edge);
  });
}

}  // namespace

TORCH_LIBRARY_IMPL(fusesample, CUDA, m) {
  m.impl("induced_subgraph", &induced_subgraph_cuda);
}

}  // namespace fusesample
