// CPU kernel of fusesample::random_walk: walks in parallel, each one
// walk_one() (walk_step.h), the same code the CUDA kernel runs.
#include <ATen/core/Tensor.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <tuple>
#include <vector>

#include "../random_walk_common.h"

namespace fusesample {
namespace walk {
namespace {

std::tuple<at::Tensor, at::Tensor> random_walk_cpu(
    const at::Tensor& rowptr, const at::Tensor& col,
    const c10::optional<at::Tensor>& edge_id,
    const c10::optional<at::Tensor>& weight_cumsum, const at::Tensor& start,
    int64_t walk_length, double p, double q, double restart_prob,
    int64_t rng_seed, bool return_edge) {
  check_inputs(rowptr, col, edge_id, weight_cumsum, start, walk_length, p, q,
               restart_prob);
  const WalkInputs in(rowptr, col, edge_id, weight_cumsum, start);
  const auto& start_c = in.start;
  const int64_t num_walks = in.num_walks();
  const int64_t roots = roots_per_walk(start_c);
  const int64_t num_nodes = in.num_nodes();

  const int64_t* s = start_c.data_ptr<int64_t>();
  for (int64_t i = 0; i < start_c.numel(); ++i)
    TORCH_CHECK(s[i] >= 0 && s[i] < num_nodes, kOp, ": 'start' holds id ",
                s[i], ", outside [0, ", num_nodes, ")");

  // (Not a structured binding: lambdas below capture them, which C++17
  // nvcc builds refuse.)
  at::Tensor node, edge;
  std::tie(node, edge) = in.outputs(walk_length, return_edge);
  const WalkParams w = make_params(walk_length, p, q, restart_prob, rng_seed);
  int64_t* node_out = node.data_ptr<int64_t>();
  int64_t* edge_out = return_edge ? edge.data_ptr<int64_t>() : nullptr;
  auto edge_row = [&](int64_t i) {
    return edge_out == nullptr ? nullptr : edge_out + i * walk_length;
  };

  AT_DISPATCH_INDEX_TYPES(in.col.scalar_type(), "random_walk_cpu", [&] {
    const auto g = in.graph<index_t>();
    // A walk costs walk_length steps, so small grains already amortise the
    // scheduling.
    at::parallel_for(0, num_walks, 64, [&](int64_t lo, int64_t hi) {
      if (start_c.dim() == 1) {
        for (int64_t i = lo; i < hi; ++i)
          walk_one(g, w, i, s[i], node_out + i * (walk_length + 1),
                   edge_row(i));
        return;
      }
      std::vector<int64_t> frontier(roots);
      for (int64_t i = lo; i < hi; ++i)
        multi_root_walk_one(g, w, i, s + i * roots, roots, frontier.data(),
                            node_out + i * (roots + walk_length),
                            edge_row(i));
    });
  });
  return {node, edge};
}

}  // namespace

TORCH_LIBRARY_IMPL(fusesample, CPU, m) {
  m.impl("random_walk", &random_walk_cpu);
}

}  // namespace walk
}  // namespace fusesample
