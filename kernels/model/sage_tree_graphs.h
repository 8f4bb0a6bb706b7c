// CUDA graphs of fusesample::sage_tree's forward and backward, recorded on
// the second call with one signature and replayed after, so that the eager
// step costs a few launches instead of ~50 (see sage_tree_graphs.cpp).
#pragma once

#include <memory>
#include <vector>

#include "sage_tree_step.h"

namespace fusesample {
namespace sage_tree {

class StepGraphs;  // one recorded (forward, backward) pair

// How a forward ran; the op returns it so that its Python wrapper can warn
// (a warning raised in C++ inside a custom op does not reach Python).
enum class Replay : int64_t {
  kEager = 0,     // eager by design (CPU, no recording yet, options)
  kReplayed = 1,  // replayed from a CUDA graph
  kBusy = 2,      // eager: the recording holds another forward's state
};

// The forward's output from a replayed graph, or an undefined tensor when
// this call runs eagerly. On success `*lease` holds the graph, whose buffers
// (the saved state) belong to this forward until the lease is dropped.
// `need` is which of [x, params...] will want a gradient.
at::Tensor replay_forward(const at::Tensor& x, const at::Tensor& colptr,
                          const at::Tensor& row, const at::Tensor& seeds,
                          at::TensorList params, const Options& o,
                          const std::vector<bool>& need,
                          std::shared_ptr<StepGraphs>* lease, Replay* how);

// Gradients for [x, params...] of the forward whose lease this is (fresh
// tensors); the graph's saved state is consumed.
// `inputs` are [x, params...] of that forward (a recording holds them
// weakly).
std::vector<at::Tensor> replay_backward(StepGraphs& graphs, const at::Tensor& grad,
                                        const std::vector<bool>& need,
                                        const Options& o, at::TensorList inputs);

}  // namespace sage_tree
}  // namespace fusesample
