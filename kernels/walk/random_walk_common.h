// Argument checks and parameters of fusesample::random_walk, shared by its
// CPU and CUDA kernels.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>

#include <algorithm>
#include <cmath>
#include <tuple>

#include "../common/checks.h"
#include "walk_step.h"

namespace fusesample {
namespace walk {

constexpr const char* kOp = "fusesample::random_walk";

inline void check_inputs(const at::Tensor& rowptr, const at::Tensor& col,
                         const c10::optional<at::Tensor>& edge_id,
                         const c10::optional<at::Tensor>& weight_cumsum,
                         const at::Tensor& start, int64_t walk_length,
                         double p, double q, double restart_prob) {
  check_compressed(kOp, "rowptr", rowptr, "col", col, "num_nodes");
  check_graph_values(kOp, "rowptr", rowptr, "col", col,
                              rowptr.numel() - 1);
  check_slot_values(kOp, "edge_id", edge_id, at::kLong, "col", col, "rowptr",
                    rowptr);
  check_slot_values(kOp, "weight_cumsum", weight_cumsum, at::kDouble, "col",
                    col, "rowptr", rowptr);
  TORCH_CHECK(start.dim() == 1 || start.dim() == 2, kOp,
              ": 'start' must be [S] (a start per walk) or [S, R] (R roots "
              "per multi-root walk), got shape ", start.sizes());
  check_dtype(kOp, "start", start, at::kLong);
  check_same_device(kOp, "start", start, "rowptr", rowptr);
  TORCH_CHECK(walk_length >= 1, kOp, ": 'walk_length' must be >= 1, got ",
              walk_length);
  if (start.dim() == 2) {
    TORCH_CHECK(start.size(1) >= 1, kOp,
                ": a multi-root walk needs at least one root per walk");
    TORCH_CHECK(p == 1.0 && q == 1.0 && restart_prob == 0.0, kOp,
                ": multi-root walks (a 2-D 'start') are first-order without "
                "restarts; got p=", p, ", q=", q, ", restart_prob=",
                restart_prob);
  }
  TORCH_CHECK(std::isfinite(p) && p > 0, kOp, ": 'p' must be > 0, got ", p);
  TORCH_CHECK(std::isfinite(q) && q > 0, kOp, ": 'q' must be > 0, got ", q);
  TORCH_CHECK(restart_prob >= 0 && restart_prob < 1, kOp,
              ": 'restart_prob' must be in [0, 1), got ", restart_prob);
}

// Roots per walk: R for a multi-root walk's [S, R] start, else 1. A walk's
// node row holds its R roots, then walk_length nodes.
inline int64_t roots_per_walk(const at::Tensor& start) {
  return start.dim() == 2 ? start.size(1) : 1;
}

inline WalkParams make_params(int64_t walk_length, double p, double q,
                              double restart_prob, int64_t rng_seed) {
  WalkParams w;
  w.rng_seed = static_cast<uint64_t>(rng_seed);
  w.walk_length = walk_length;
  w.inv_p = 1.0 / p;
  w.inv_q = 1.0 / q;
  w.max_alpha = std::max({w.inv_p, 1.0, w.inv_q});
  w.second_order = p != 1.0 || q != 1.0;
  w.restart_prob = restart_prob;
  return w;
}

// The op's tensors, contiguous (the kernels index them as flat arrays).
struct WalkInputs {
  at::Tensor rowptr, col, start;
  c10::optional<at::Tensor> edge_id, weight_cumsum;

  WalkInputs(const at::Tensor& rowptr_, const at::Tensor& col_,
             const c10::optional<at::Tensor>& edge_id_,
             const c10::optional<at::Tensor>& weight_cumsum_,
             const at::Tensor& start_)
      : rowptr(rowptr_.contiguous()), col(col_.contiguous()),
        start(start_.contiguous()) {
    if (edge_id_.has_value()) edge_id = edge_id_->contiguous();
    if (weight_cumsum_.has_value()) weight_cumsum = weight_cumsum_->contiguous();
  }

  int64_t num_walks() const { return start.size(0); }
  int64_t num_nodes() const { return rowptr.numel() - 1; }

  // The op's outputs: node [S, R + walk_length] and edge [S, walk_length]
  // ([0, walk_length] when edge ids are not asked for).
  std::tuple<at::Tensor, at::Tensor> outputs(int64_t walk_length,
                                             bool return_edge) const {
    return {at::empty({num_walks(), roots_per_walk(start) + walk_length},
                      start.options()),
            at::empty({return_edge ? num_walks() : 0, walk_length},
                      start.options())};
  }

  template <typename index_t>
  WalkGraph<index_t> graph() const {
    WalkGraph<index_t> g;
    g.rowptr = rowptr.data_ptr<int64_t>();
    g.col = col.data_ptr<index_t>();
    g.edge_id = edge_id.has_value() ? edge_id->data_ptr<int64_t>() : nullptr;
    g.weight_cumsum =
        weight_cumsum.has_value() ? weight_cumsum->data_ptr<double>() : nullptr;
    return g;
  }
};

}  // namespace walk
}  // namespace fusesample
