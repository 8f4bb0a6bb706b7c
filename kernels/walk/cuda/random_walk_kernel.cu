// CUDA kernel of fusesample::random_walk: one thread per walk, running
// walk_one() (walk_step.h), the same code as the CPU kernel, so the two
// agree bitwise.
//
// Why a thread per walk and not NextDoor's transit-parallel grouping: a
// first-order step reads two row pointers and one neighbour, whatever the
// degree, so a hub costs a walker no more than a leaf and there is no
// imbalance to fix; the reads are random either way. A second-order step
// adds a binary search of the previous node's row, O(log deg).
//
// Multi-root walks (a 2-D start) run multi_root_walk_one, also a thread per
// walk; a step costs O(R) to pick the node that moves.
//
// A start id outside [0, N) gets a row of -1 (nodes and edges) rather than
// a wild read; the Python wrapper checks the range first unless told not to
// (that check costs a host synchronisation).
#include <ATen/core/Tensor.h>
#include <ATen/Dispatch.h>
#include <ATen/ops/empty.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include <tuple>

#include "../../common/grid.h"
#include "../random_walk_common.h"

namespace fusesample {
namespace walk {
namespace {

constexpr int kThreads = 256;

// node / edge are step-major, [walk_length + 1, num_walks] and
// [walk_length, num_walks]: a warp's 32 walks write a step's ids to 256
// contiguous bytes instead of 32 sectors 8 bytes each (the caller
// transposes them to a row a walk).
template <typename index_t>
__global__ void random_walk_kernel(WalkGraph<index_t> g, WalkParams w,
                                   const int64_t* __restrict__ start,
                                   int64_t num_walks, int64_t num_nodes,
                                   int64_t* __restrict__ node,
                                   int64_t* __restrict__ edge) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
       i < num_walks; i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t* node_i = node + i;
    int64_t* edge_i = edge == nullptr ? nullptr : edge + i;
    const int64_t s = start[i];
    if (s < 0 || s >= num_nodes) {
      for (int64_t k = 0; k <= w.walk_length; ++k) node_i[k * num_walks] = -1;
      for (int64_t k = 0; edge_i != nullptr && k < w.walk_length; ++k)
        edge_i[k * num_walks] = -1;
      continue;
    }
    walk_one(g, w, i, s, node_i, edge_i, num_walks);
  }
}

// Multi-root walks: a thread per walk, its frontier in `frontier` [S, R].
template <typename index_t>
__global__ void multi_root_walk_kernel(WalkGraph<index_t> g, WalkParams w,
                                       const int64_t* __restrict__ start,
                                       int64_t num_walks, int64_t roots,
                                       int64_t num_nodes,
                                       int64_t* __restrict__ frontier,
                                       int64_t* __restrict__ node,
                                       int64_t* __restrict__ edge) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
       i < num_walks; i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t* roots_i = start + i * roots;
    int64_t* node_i = node + i * (roots + w.walk_length);
    int64_t* edge_i = edge == nullptr ? nullptr : edge + i * w.walk_length;
    bool valid = true;
    for (int64_t r = 0; r < roots; ++r)
      valid = valid && roots_i[r] >= 0 && roots_i[r] < num_nodes;
    if (!valid) {
      for (int64_t k = 0; k < roots + w.walk_length; ++k) node_i[k] = -1;
      for (int64_t k = 0; edge_i != nullptr && k < w.walk_length; ++k) edge_i[k] = -1;
      continue;
    }
    multi_root_walk_one(g, w, i, roots_i, roots, frontier + i * roots, node_i,
                        edge_i);
  }
}

std::tuple<at::Tensor, at::Tensor> random_walk_cuda(
    const at::Tensor& rowptr, const at::Tensor& col,
    const c10::optional<at::Tensor>& edge_id,
    const c10::optional<at::Tensor>& weight_cumsum, const at::Tensor& start,
    int64_t walk_length, double p, double q, double restart_prob,
    int64_t rng_seed, bool return_edge) {
  check_inputs(rowptr, col, edge_id, weight_cumsum, start, walk_length, p, q,
               restart_prob);
  c10::cuda::CUDAGuard guard(rowptr.device());
  const WalkInputs in(rowptr, col, edge_id, weight_cumsum, start);
  const auto& start_c = in.start;
  const int64_t num_walks = in.num_walks();
  const int64_t roots = roots_per_walk(start_c);
  // (Not a structured binding: lambdas below capture them, which C++17
  // nvcc builds refuse.)
  at::Tensor node, edge;
  std::tie(node, edge) = in.outputs(walk_length, return_edge);
  int64_t* edge_out = return_edge ? edge.data_ptr<int64_t>() : nullptr;
  if (num_walks == 0) return {node, edge};

  const WalkParams w = make_params(walk_length, p, q, restart_prob, rng_seed);
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  const int64_t blocks = grid_blocks(num_walks, kThreads, 8);
  AT_DISPATCH_INDEX_TYPES(in.col.scalar_type(), "random_walk_cuda", [&] {
    const auto g = in.graph<index_t>();
    if (start_c.dim() == 1) {
      auto node_t = at::empty({walk_length + 1, num_walks}, node.options());
      auto edge_t = return_edge
          ? at::empty({walk_length, num_walks}, node.options()) : at::Tensor();
      random_walk_kernel<index_t><<<blocks, kThreads, 0, stream>>>(
          g, w, start_c.data_ptr<int64_t>(), num_walks, in.num_nodes(),
          node_t.data_ptr<int64_t>(),
          return_edge ? edge_t.data_ptr<int64_t>() : nullptr);
      C10_CUDA_KERNEL_LAUNCH_CHECK();  // (before the copies launch their own)
      node.copy_(node_t.t());
      if (return_edge) edge.copy_(edge_t.t());
    } else {
      auto frontier = at::empty({num_walks, roots}, start.options());
      multi_root_walk_kernel<index_t><<<blocks, kThreads, 0, stream>>>(
          g, w, start_c.data_ptr<int64_t>(), num_walks, roots,
          in.num_nodes(), frontier.data_ptr<int64_t>(),
          node.data_ptr<int64_t>(), edge_out);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
  });
  return {node, edge};
}

}  // namespace

TORCH_LIBRARY_IMPL(fusesample, CUDA, m) {
  m.impl("random_walk", &random_walk_cuda);
}

}  // namespace walk
}  // namespace fusesample
