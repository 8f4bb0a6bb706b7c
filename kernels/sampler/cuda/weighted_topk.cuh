// Weighted sampling without replacement on the GPU, one warp per segment:
// the k smallest exponential keys (../segment_rule.h) of the segment's d
// drawable in-edges. The warp walks the segment 32 positions at a time, each
// lane computing one key; lanes whose key beats the current k-th best are
// inserted, one at a time in position order, by lane 0 into a sorted list
// (keys in `keys`, positions in `picks`). For keys in random order a
// position enters the list with probability about k / j, so the insertions
// cost O(k log(d / k)) and the pass O(d / 32) steps per target. The result
// is the CPU kernel's partial sort: same keys, same order.
#pragma once

#include <cstdint>

#include "../segment_rule.h"

namespace fusesample {

// Every lane of the warp calls it; on return picks[0, k) (in key order) are
// visible to the whole warp. keys/picks: scratch of k entries each.
__device__ inline void warp_weighted_topk(uint64_t rng_seed, int64_t a, int64_t b,
                                          const double* cum, int64_t d, int64_t k,
                                          int64_t* picks, double* keys) {
  const int lane = threadIdx.x & 31;
  int64_t count = 0;  // warp-uniform: entries in the list
  double worst_key = 0.0;
  int64_t worst_pos = 0;
  for (int64_t base = 0; base < d; base += 32) {
    const int64_t j = base + lane;
    double key = 0.0;
    bool candidate = false;
    if (j < d) {
      key = weighted_key(rng_seed, a, b, j, cum);
      candidate = count < k || key_before(key, j, worst_key, worst_pos);
    }
    unsigned pending = __ballot_sync(0xffffffffu, candidate);
    while (pending) {
      const int src = __ffs(pending) - 1;
      pending &= pending - 1;
      const double ck = __shfl_sync(0xffffffffu, key, src);
      const int64_t cj = base + src;
      // The list may have improved since the ballot.
      if (count == k && !key_before(ck, cj, worst_key, worst_pos)) continue;
      if (lane == 0) {
        int64_t at = count < k ? count : k - 1;  // a full list drops its last
        while (at > 0 && key_before(ck, cj, keys[at - 1], picks[at - 1])) {
          keys[at] = keys[at - 1];
          picks[at] = picks[at - 1];
          --at;
        }
        keys[at] = ck;
        picks[at] = cj;
      }
      __syncwarp();
      if (count < k) ++count;
      if (count == k) {
        worst_key = keys[k - 1];
        worst_pos = picks[k - 1];
      }
    }
  }
  __syncwarp();
}

}  // namespace fusesample
