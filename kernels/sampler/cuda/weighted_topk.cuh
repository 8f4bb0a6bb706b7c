// Weighted sampling without replacement on the GPU, one warp per segment:
// successive sampling as ../segment_rule.h defines it, the same picks in the
// same order as the CPU kernel.
//   Step 1: 32 attempts at a time, one per lane, each a search of the
//   segment's prefix sums. A segment of at most kRegisterChunks * 32 in-edges
//   (most of a power-law graph's) is loaded once, coalesced, into the warp's
//   registers and searched there through shuffles: one memory round trip per
//   target instead of log2(deg) dependent ones per attempt (the cost that
//   made weighted sampling 1.7x uniform). Longer segments are searched in
//   memory. The round's attempts are resolved together: an attempt is a pick
//   when it repeats neither an earlier pick (held one per lane, compared by
//   shuffles) nor an earlier attempt of the round (__match_any_sync), and the
//   first k - count of those, in attempt order, are taken -- exactly what
//   resolving the attempts one by one in order takes.
//   Step 2 (targets still short of k after kWeightedAttempts): the rest of
//   the sample as the smallest exponential keys among the in-edges not yet
//   picked. The warp walks the segment 32 positions at a time, a key per
//   lane; lanes that beat the current worst kept key are inserted, in
//   position order, by lane 0 into a sorted list (keys beside picks).
#pragma once

#include <cstdint>

#include "../segment_rule.h"

namespace fusesample {

// Segments of at most this many 32s of in-edges are searched in registers.
constexpr int kRegisterChunks = 4;

// Prefix sum j of a segment held as chunk[r] = cum[32 r + lane] (r < chunks);
// every lane calls it (j per lane).
__device__ __forceinline__ double warp_prefix_at(const double (&chunk)[kRegisterChunks],
                                                 int chunks, int64_t j) {
  double out = 0.0;
#pragma unroll
  for (int r = 0; r < kRegisterChunks; ++r) {
    if (r < chunks) {  // warp-uniform
      const double x = __shfl_sync(0xffffffffu, chunk[r], static_cast<int>(j & 31));
      if ((j >> 5) == r) out = x;
    }
  }
  return out;
}

// first_above over the prefix sums in registers: the lanes' searches step
// together (shuffles need the whole warp); a lane whose search is over keeps
// stepping in place.
__device__ __forceinline__ int64_t warp_first_above(const double (&chunk)[kRegisterChunks],
                                                    int chunks, int64_t d, double r) {
  int64_t lo = 0, hi = d - 1;
  while (__any_sync(0xffffffffu, lo < hi)) {
    const int64_t mid = lo + (hi - lo) / 2;
    const double x = warp_prefix_at(chunk, chunks, mid);
    if (lo < hi) {
      if (x > r) hi = mid; else lo = mid + 1;
    }
  }
  return lo;
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
  const unsigned full = 0xffffffffu;
  const int lane = threadIdx.x & 31;
  const unsigned earlier_lanes = (1u << lane) - 1;
  const bool in_registers = d <= 32 * kRegisterChunks;  // warp-uniform
  const int chunks = in_registers ? static_cast<int>((d + 31) / 32) : 0;
  double chunk[kRegisterChunks];
#pragma unroll
  for (int r = 0; r < kRegisterChunks; ++r) {
    const int64_t j = 32 * r + lane;
    chunk[r] = r < chunks && j < d ? cum[j] : 0.0;
  }
  const double total = in_registers ? warp_prefix_at(chunk, chunks, d - 1) : cum[d - 1];
  int64_t held = -1;   // picks[lane], once picked (lane < 32)
  int64_t count = 0;   // warp-uniform
  for (int64_t base = 0; base < kWeightedAttempts && count < k; base += 32) {
    const double point = weighted_point(rng_seed, a, b, base + lane, total);
    const int64_t j = in_registers
                          ? warp_first_above(chunk, chunks, d, point)
                          : first_above([cum](int64_t i) { return cum[i]; }, d, point);
    bool repeat = false;
    const int64_t in_lanes = count < 32 ? count : 32;
    for (int64_t q = 0; q < in_lanes; ++q)
      repeat |= __shfl_sync(full, held, static_cast<int>(q)) == j;
    for (int64_t q = 32; q < count && !repeat; ++q) repeat |= picks[q] == j;  // k > 32
    const unsigned same = __match_any_sync(full, static_cast<unsigned long long>(j));
    const bool pick = !repeat && (same & earlier_lanes) == 0;
    const unsigned pickers = __ballot_sync(full, pick);
    const int64_t rank = __popc(pickers & earlier_lanes);
    if (pick && rank < k - count) picks[count + rank] = j;
    const int64_t before = count;
    count += min(static_cast<int64_t>(__popc(pickers)), k - count);
    __syncwarp();
    if (lane >= before && lane < count) held = picks[lane];
  }
  if (count < k) warp_smallest_keys(rng_seed, a, b, cum, d, count, k - count, picks, keys);
  __syncwarp();
}

}  // namespace fusesample
