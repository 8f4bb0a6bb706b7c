// Inverse-CDF draws over float64 prefix sums, shared by every sampler that
// draws by weight (weighted neighbour sampling, weighted random walks,
// FastGCN's layer draws). Host and device code; the arithmetic is separately
// rounded (det_math.h), so the CPU and CUDA kernels find the same position.
#pragma once

#include <cstdint>

#include "det_math.h"
#include "rng.h"

namespace fusesample {

// The top 53 bits of a random word as a double in [0, 1), exactly.
FS_HOST_DEVICE double unit_uniform(uint64_t bits) {
  return static_cast<double>(bits >> 11) * 0x1.0p-53;
}

// The prefix-sum value weighted draw s searches for: u * total, u in [0, 1)
// the top 53 bits of the draw's random word, exactly.
FS_HOST_DEVICE double weighted_point(uint64_t rng_seed, int64_t a, int64_t b, int64_t s,
                                     double total) {
  return FS_MUL(unit_uniform(random_bits(rng_seed, a, b, s)), total);
}

// The first position of [0, d) whose prefix sum exceeds r (d - 1 if none),
// reading prefix sum j as at(j). Every search of a draw (the CPU's, a GPU
// thread's over global memory, a warp's over its registers) is this loop,
// so all find the same position.
template <typename At>
FS_HOST_DEVICE int64_t first_above(const At& at, int64_t d, double r) {
  int64_t lo = 0, hi = d - 1;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (at(mid) > r) hi = mid; else lo = mid + 1;
  }
  return lo;
}

// Weighted draw s with replacement over [0, d) of the prefix sums `cum` (the
// segment's, d >= 1 drawable): the first position whose prefix sum exceeds
// u * total.
FS_HOST_DEVICE int64_t weighted_draw(uint64_t rng_seed, int64_t a, int64_t b,
                                     int64_t s, const double* cum, int64_t d) {
  return first_above([cum](int64_t j) { return cum[j]; }, d,
                     weighted_point(rng_seed, a, b, s, cum[d - 1]));
}

}  // namespace fusesample
