// fusesample::normalize_by_target -- a layer-wise batch's weight
// normalisation (LayerWiseLoader's normalize_weights), one op per device
// where the ATen composition took seven launches a layer.
//
// Contract:
//   normalize_by_target(weight [E] float64, col [E] int64,
//                       num_sampled_edges [L] int64 (CPU), dtype) -> [E]
//   The weights come in layers (num_sampled_edges[l] of them after the
//   previous layers'), and within a layer grouped by target: runs of equal
//   col, as fusesample::layer_sample returns its edges (target by target).
//   Each weight is divided by the sum of its run (summed in edge order; 0
//   where that sum is not positive) and returned in `dtype`. (Targets' ids
//   repeat across layers, so the runs never cross a layer's end.)
#include <torch/library.h>

TORCH_LIBRARY_FRAGMENT(fusesample, m) {
  m.def(
      "normalize_by_target(Tensor weight, Tensor col, Tensor num_sampled_edges, "
      "ScalarType dtype) -> Tensor");
}
