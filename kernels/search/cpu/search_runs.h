// Binary searches in sorted runs of one array, in a parallel loop: the CPU
// body of fusesample::segment_search, and layer_sample's lookups of its
// sources among a sorted pool (one run: the whole array).
#pragma once

#include <ATen/Parallel.h>

#include <algorithm>
#include <cstdint>
#include <utility>

namespace fusesample {

// out[i] = the position in `sorted` of the first entry of run `run_of(i)`
// (a [begin, end) pair of positions) that is >= value[i] (upper: >), or the
// run's end.
template <typename index_t, typename RunOf>
void search_runs(const index_t* sorted, const index_t* value, int64_t queries,
                 bool upper, const RunOf& run_of, int64_t* out) {
  at::parallel_for(0, queries, 4096, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      const std::pair<int64_t, int64_t> run = run_of(i);
      const index_t* begin = sorted + run.first;
      const index_t* end = sorted + run.second;
      out[i] = (upper ? std::upper_bound(begin, end, value[i])
                      : std::lower_bound(begin, end, value[i])) - sorted;
    }
  });
}

}  // namespace fusesample
