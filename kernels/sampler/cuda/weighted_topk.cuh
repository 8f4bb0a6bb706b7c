// Weighted sampling without replacement on the GPU, one warp per segment:
// successive sampling as ../segment_rule.h defines it, the same picks in the
// same order as the CPU kernel.
//   Step 1: 32 attempts at a time, one per lane (a binary search of the
//   prefix sums each), resolved in attempt order: an attempt that repeats an
//   earlier pick is rejected (a warp vote over the picks so far).
//   Step 2 (targets still short of k after kWeightedAttempts): the rest of
//   the sample as the smallest exponential keys among the in-edges not yet
//   picked. The warp walks the segment 32 positions at a time, a key per
//   lane; lanes that beat the current worst kept key are inserted, in
//   position order, by lane 0 into a sorted list (keys beside picks).
#pragma once

#include <cstdint>

#include "../segment_rule.h"

namespace fusesample {

// Whether some entry of picks[0, n) equals j (a warp vote; all lanes call).
__device__ __forceinline__ bool warp_picked(const int64_t* picks, int64_t n,
                                            int64_t j) {
  const int lane = threadIdx.x & 31;
  bool found = false;
  for (int64_t q = 0; q < n && !found; q += 32)
    found = __any_sync(0xffffffffu, q + lane < n && picks[q + lane] == j);
  return found;
}

// Step 2: the `want` smallest keys among positions [0, d) not in
// picks[0, have), in key order, into picks[have, have + want) (their keys
// into keys[have, ...)).
__device__ inline void warp_smallest_keys(uint64_t rng_seed, int64_t a, int64_t b,
                                          const double* cum, int64_t d, int64_t have,
                                          int64_t want, int64_t* picks, double* keys) {
  const int lane = threadIdx.x & 31;
  int64_t* list = picks + have;
  double* list_keys = keys + have;
  int64_t count = 0;  // warp-uniform: entries in the list
  double worst_key = 0.0;
  int64_t worst_pos = 0;
  for (int64_t base = 0; base < d; base += 32) {
    const int64_t j = base + lane;
    double key = 0.0;
    bool candidate = false;
    if (j < d) {
      bool excluded = false;
      for (int64_t q = 0; q < have && !excluded; ++q) excluded = picks[q] == j;
      if (!excluded) {
        key = weighted_key(rng_seed, a, b, j, cum);
        candidate = count < want || key_before(key, j, worst_key, worst_pos);
      }
    }
    unsigned pending = __ballot_sync(0xffffffffu, candidate);
    while (pending) {
      const int src = __ffs(pending) - 1;
      pending &= pending - 1;
      const double ck = __shfl_sync(0xffffffffu, key, src);
      const int64_t cj = base + src;
      // The list may have improved since the vote.
      if (count == want && !key_before(ck, cj, worst_key, worst_pos)) continue;
      if (lane == 0) {
        int64_t at = count < want ? count : want - 1;  // a full list drops its last
        while (at > 0 && key_before(ck, cj, list_keys[at - 1], list[at - 1])) {
          list_keys[at] = list_keys[at - 1];
          list[at] = list[at - 1];
          --at;
        }
        list_keys[at] = ck;
        list[at] = cj;
      }
      __syncwarp();
      if (count < want) ++count;
      if (count == want) {
        worst_key = list_keys[want - 1];
        worst_pos = list[want - 1];
      }
    }
  }
  __syncwarp();
}

// k picks (k < d drawable in-edges) into picks[0, k); keys: scratch of k.
// Every lane of the warp calls it; on return the picks are visible to all.
__device__ inline void warp_weighted_sample(uint64_t rng_seed, int64_t a, int64_t b,
                                            const double* cum, int64_t d, int64_t k,
                                            int64_t* picks, double* keys) {
  const int lane = threadIdx.x & 31;
  int64_t count = 0;  // warp-uniform
  for (int64_t base = 0; base < kWeightedAttempts && count < k; base += 32) {
    const int64_t mine = weighted_draw(rng_seed, a, b, base + lane, cum, d);
    for (int src = 0; src < 32 && count < k; ++src) {  // attempt order
      const int64_t j = __shfl_sync(0xffffffffu, mine, src);
      if (warp_picked(picks, count, j)) continue;  // a repeat: rejected
      if (lane == 0) picks[count] = j;
      __syncwarp();
      ++count;
    }
  }
  if (count < k) warp_smallest_keys(rng_seed, a, b, cum, d, count, k - count, picks, keys);
  __syncwarp();
}

}  // namespace fusesample
