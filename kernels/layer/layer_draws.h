// The draws of fusesample::layer_sample and a layer's in-edge slots, shared
// by its CPU and CUDA kernels (host and device code, separately rounded
// arithmetic: det_math.h), so both draw the same nodes.
#pragma once

#include <cstdint>
#include <limits>

#include "../common/det_math.h"
#include "../common/rng.h"
#include "../common/weighted_draw.h"

namespace fusesample {
namespace layer {

// LADIES: candidate c's importance, the sum of its in-edges' squared values
// val2[begin:end] in that order, and its exponential key -log(U_c) / q_c,
// U_c keyed by (rng_seed, layer, c): the s smallest keys are a successive
// sample proportional to q. A zero importance is never drawn (key +inf).
// Val2: anything indexed like an array (a pointer; the CUDA kernel's view
// of the values through the sort's permutation).
template <class Val2>
FS_HOST_DEVICE void ladies_key(const Val2& val2, int64_t begin, int64_t end,
                               uint64_t rng_seed, int64_t layer, int64_t c,
                               double* q_out, double* key_out) {
  double q = 0.0;
  for (int64_t k = begin; k < end; ++k) q = FS_ADD(q, val2[k]);
  *q_out = q;
  if (q > 0.0) {
    const uint64_t m = (random_bits(rng_seed, static_cast<uint64_t>(layer),
                                    static_cast<uint64_t>(c), 0) >> 11) + 1;
    *key_out = FS_DIV(det_neg_log(m), q);
  } else {
    *key_out = std::numeric_limits<double>::infinity();
  }
}

// The CSC slot of position i of the in-edges of `node` laid out target by
// target (segments ending at `ends`), i lying in target t's segment.
FS_HOST_DEVICE int64_t in_edge_slot(const int64_t* colptr, const int64_t* node,
                                    const int64_t* ends, int64_t t, int64_t i) {
  return colptr[node[t]] + i - (t > 0 ? ends[t - 1] : 0);
}

// FastGCN: draw j of a layer, a node id with probability proportional to
// its importance (inverse CDF over the prefix sums cum[0:n]), keyed by
// (rng_seed, layer, j, 1).
FS_HOST_DEVICE int64_t fastgcn_draw(const double* cum, int64_t n,
                                    uint64_t rng_seed, int64_t layer,
                                    int64_t j) {
  return weighted_draw(rng_seed, layer, j, 1, cum, n);
}

}  // namespace layer
}  // namespace fusesample
