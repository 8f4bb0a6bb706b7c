// Floyd's algorithm: a uniform k-subset of [0, d) in k draws, so sampling k
// of a hub's million in-edges costs O(k), not a scan of its list; and
// sample_positions, the draw modes around it. Shared by every CPU sampler; the CUDA kernels run the same draws (floyd.cuh), so both
// devices pick the same subsets for the same RNG key.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "rng.h"

namespace fusesample {

// Subsets up to this size test membership by scanning the draws so far
// (cheaper than a bitmap); larger ones use a bitmap of the neighbour list.
constexpr int64_t kFloydScanMax = 64;

// Draw s (s = 0..k-1) is keyed by (rng_seed, a, b, s); `emit(s, position)`
// receives the picks in draw order. `picks` and `seen` are the caller's
// scratch (reused across targets; `seen` is left all-zero).
template <typename Emit>
void floyd_sample(uint64_t rng_seed, int64_t a, int64_t b, int64_t d, int64_t k,
                  std::vector<int64_t>& picks, std::vector<uint8_t>& seen,
                  Emit emit) {
  picks.clear();
  const bool use_bitmap = k > kFloydScanMax;
  if (use_bitmap && static_cast<int64_t>(seen.size()) < d) seen.resize(d, 0);
  for (int64_t s = 0; s < k; ++s) {
    const int64_t j = d - k + s;
    int64_t t = keyed_draw(rng_seed, a, b, s, j + 1);
    const bool taken =
        use_bitmap ? seen[t] != 0
                   : std::find(picks.begin(), picks.end(), t) != picks.end();
    if (taken) t = j;
    if (use_bitmap) seen[t] = 1;
    picks.push_back(t);
    emit(s, t);
  }
  if (use_bitmap)
    for (int64_t t : picks) seen[t] = 0;
}

// One target's draws in every mode of the samplers' contract: all d
// positions (k = -1, or k >= d without replacement), k uniform draws with
// replacement (none when d = 0), else Floyd. `emit(slot, position)`.
template <typename Emit>
void sample_positions(uint64_t rng_seed, int64_t a, int64_t b, int64_t d,
                      int64_t k, bool replace, std::vector<int64_t>& picks,
                      std::vector<uint8_t>& seen, Emit emit) {
  if (k < 0 || (!replace && k >= d)) {
    for (int64_t j = 0; j < d; ++j) emit(j, j);
  } else if (replace) {
    if (d > 0)
      for (int64_t s = 0; s < k; ++s)
        emit(s, keyed_draw(rng_seed, a, b, s, d));
  } else {
    floyd_sample(rng_seed, a, b, d, k, picks, seen, emit);
  }
}

}  // namespace fusesample
