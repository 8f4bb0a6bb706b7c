// Floyd's algorithm on the GPU, one warp per target: the draws are sequential
// (each depends on the picks before it), the membership test over the earlier
// picks is warp-parallel. Same keys and arithmetic as floyd.h, so the CPU and
// CUDA kernels pick identical subsets.
#pragma once

#include <cstdint>

#include "rng.h"

namespace fusesample {

// Writes the k draws keyed by (rng_seed, a, b, s) into picks[0, k) (global or
// shared memory the warp can read back). Every lane of the warp must call it;
// on return all picks are visible to the whole warp.
__device__ inline void warp_floyd(uint64_t rng_seed, int64_t a, int64_t b,
                                  int64_t d, int64_t k, int64_t* picks) {
  const int lane = threadIdx.x & 31;
  for (int64_t s = 0; s < k; ++s) {
    const int64_t j = d - k + s;
    const int64_t draw = keyed_draw(rng_seed, a, b, s, j + 1);
    bool taken = false;
    for (int64_t q = 0; q < s && !taken; q += 32)
      taken = __any_sync(0xffffffffu, q + lane < s && picks[q + lane] == draw);
    if (lane == 0) picks[s] = taken ? j : draw;
    __syncwarp();
  }
}

}  // namespace fusesample
