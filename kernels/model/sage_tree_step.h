// The computation behind fusesample::sage_tree (contract: sage_tree.cpp):
// its options, the state its backward reads, and the forward and backward
// themselves, as ATen calls on x's device. sage_tree.cpp wraps them in the
// op's autograd; sage_tree_graphs.cpp records them in CUDA graphs.
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/custom_class.h>

#include <string>
#include <utility>
#include <vector>

#include "sage_tree_layers.h"

namespace fusesample {
namespace sage_tree {

constexpr const char* kOp = "fusesample::sage_tree";

struct Options {
  std::vector<int64_t> fanouts;
  std::string aggr;
  Reduce reduce;
  bool replace;
  int64_t rng_seed;
  double dropout;
  at::ScalarType dtype;
  bool bias;
  bool inplace_backward;
  bool replay;

  size_t per_layer() const { return bias ? 3 : 2; }
};

// Everything the backward reads.
struct State : torch::CustomClassHolder {
  at::Tensor x, colptr, row;
  // sample_aggregate's draws per tree level (x's gradient replays them)
  std::vector<at::Tensor> target, nbr, arg;
  at::Tensor agg, nodes;              // the first layer's inputs
  std::vector<at::Tensor> weight;     // per layer, in dtype: [W_l, W_r] for
                                      // layer 0, the stacked [W_l | W_r] above
  std::vector<at::ScalarType> param_dtype;
  std::vector<at::Tensor> layer_in;   // per layer j >= 1: its [n, 2C] input
  std::vector<TreeLayerSaved> layer;  // per layer j >= 1
  TreeShape tree;
};

// Argument checks (messages name the op and the argument).
void check_inputs(const at::Tensor& x, const at::Tensor& seeds,
                  at::TensorList params, const Options& o);

// The forward; with `state` it keeps what the backward needs. The inputs
// are the caller's to check (check_inputs, once per op call); autograd must
// be below (the caller's guard; autocast is turned off here).
at::Tensor run_forward(const at::Tensor& x, const at::Tensor& colptr,
                       const at::Tensor& row, const at::Tensor& seeds,
                       at::TensorList params, const Options& o, State* state);

// Gradients for [x, params...] given the output's gradient; undefined where
// need[i] is false. Turns the saved activations into gradients in place
// unless `copy`.
std::vector<at::Tensor> run_backward(State& state, const at::Tensor& grad,
                                     const std::vector<bool>& need,
                                     const Options& o, bool copy);

}  // namespace sage_tree
}  // namespace fusesample
