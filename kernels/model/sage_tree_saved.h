// One fusesample::sage_tree step as a forward that leaves a `Saved` behind
// and a backward that consumes it: shared by the op's C++ autograd
// (sage_tree.cpp, the eager step) and by the split ops torch.compile calls
// (sage_tree_split.cpp), which hand the Saved to the backward in a handle.
#pragma once

#include <torch/custom_class.h>

#include <memory>
#include <utility>
#include <vector>

#include "sage_tree_graphs.h"
#include "sage_tree_step.h"

namespace fusesample {
namespace sage_tree {

// What a step's backward needs: the eager forward's saved state, or the
// lease on the CUDA graph that replayed it.
struct Saved : torch::CustomClassHolder {
  Options options;
  size_t num_params = 0;
  c10::intrusive_ptr<State> state;
  std::shared_ptr<StepGraphs> replayed;
  // version counters of x and the parameters at the forward: an in-place
  // change before the backward (optimizer.step() too early) is an error
  std::vector<std::pair<at::Tensor, uint32_t>> versions;
  bool consumed = false;
};

// The forward of one step: checks the inputs, replays the step's CUDA graph
// where it can (`*how` says how it ran) and otherwise runs it eagerly.
// `need` is which of [x, params...] will want a gradient. Autograd must be
// below (the caller's guard).
std::pair<at::Tensor, c10::intrusive_ptr<Saved>> begin_step(
    const at::Tensor& x, const at::Tensor& colptr, const at::Tensor& row,
    const at::Tensor& seeds, at::TensorList params, const Options& o,
    const std::vector<bool>& need, Replay* how);

// The gradients for [x, params...] (undefined where `need` is false) from
// the output's gradient; raises for a second backward that the first one
// consumed, and for inputs modified in place since the forward.
std::vector<at::Tensor> finish_step(Saved& saved, const at::Tensor& grad,
                                    const std::vector<bool>& need);

Options make_options(at::IntArrayRef num_neighbors, c10::string_view aggr,
                     bool replace, int64_t rng_seed, double dropout,
                     at::ScalarType dtype, bool bias, bool inplace_backward,
                     bool replay);

}  // namespace sage_tree
}  // namespace fusesample
