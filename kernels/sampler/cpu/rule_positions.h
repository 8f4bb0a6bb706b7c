// One segment's draws on the CPU under a SegmentRule (../segment_rule.h):
// weighted segments draw by weight, every other segment (uniform, temporal:
// the rule only narrowed its range) as the uniform sampler does.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include <c10/util/Exception.h>

#include "../../common/floyd.h"
#include "../segment_rule.h"

namespace fusesample {

// A temporal CSC's segment must be sorted by time (the range search assumes
// it): its first and last times checked as the segment is read.
inline void check_time_sorted(const char* op, const int64_t* edge_time, const int64_t* colptr,
                              int64_t seg) {
  const int64_t start = colptr[seg], end = colptr[seg + 1];
  TORCH_CHECK(end - start < 2 || edge_time[start] <= edge_time[end - 1], op,
              ": 'edge_time' is not sorted within the in-edges of CSC segment ", seg, " (",
              edge_time[start], " before ", edge_time[end - 1], ")");
}

// Scratch reused across a thread's targets.
struct DrawScratch {
  std::vector<int64_t> picks;
  std::vector<uint8_t> seen;
  std::vector<std::pair<double, int64_t>> keys;
};

// `emit(slot, j)` for the draws of the drawable range [0, d) of a segment
// whose prefix sums start at `cum` (nullptr: unweighted), at fan-out k.
template <typename Emit>
void rule_positions(uint64_t rng_seed, int64_t a, int64_t b, const double* cum,
                    int64_t d, int64_t k, bool replace, DrawScratch& scratch,
                    Emit emit) {
  if (cum == nullptr || k < 0 || (!replace && k >= d)) {
    sample_positions(rng_seed, a, b, d, k, replace, scratch.picks, scratch.seen, emit);
  } else if (replace) {
    if (d > 0)
      for (int64_t s = 0; s < k; ++s) emit(s, weighted_draw(rng_seed, a, b, s, cum, d));
  } else {  // successive sampling (../segment_rule.h): rejection, then keys
    auto& picks = scratch.picks;
    picks.clear();
    for (int64_t s = 0; s < kWeightedAttempts && static_cast<int64_t>(picks.size()) < k;
         ++s) {
      const int64_t j = weighted_draw(rng_seed, a, b, s, cum, d);
      if (std::find(picks.begin(), picks.end(), j) == picks.end()) picks.push_back(j);
    }
    const int64_t drawn = static_cast<int64_t>(picks.size());
    for (int64_t s = 0; s < drawn; ++s) emit(s, picks[s]);
    if (drawn == k) return;
    auto& keys = scratch.keys;  // the rest: the smallest keys of the others
    keys.clear();
    for (int64_t j = 0; j < d; ++j)
      if (std::find(picks.begin(), picks.end(), j) == picks.end())
        keys.emplace_back(weighted_key(rng_seed, a, b, j, cum), j);
    const int64_t rest = k - drawn;
    std::partial_sort(keys.begin(), keys.begin() + rest, keys.end(),
                      [](const auto& x, const auto& y) {
                        return key_before(x.first, x.second, y.first, y.second);
                      });
    for (int64_t s = 0; s < rest; ++s) emit(drawn + s, keys[s].second);
  }
}

}  // namespace fusesample
