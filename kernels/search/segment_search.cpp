// fusesample::segment_search -- many binary searches, each in its own sorted
// run of one array: where ShaDow's grouped induced subgraphs look every
// member of a node set up in a hub's (long, sorted) neighbour list.
//
// Contract.
//   sorted [S] int32|int64    runs sorted ascending (each run on its own)
//   first, length [Q] int64   query i searches sorted[first[i], first[i] + length[i])
//   value [Q]                 sorted's dtype
//   upper                     false: the first slot of the run holding a
//                             value >= value[i]; true: > value[i]
// Returns [Q] int64: that slot, or the run's end when there is none (an
// empty run gives first[i]). upper - lower positions count the copies.
//
// Why an op: as tensor ops a search is one gather, compare and select per
// halving of the longest run: ~3 launches x 17 steps for a hub of 100K
// in-edges, twice (lower and upper bound), per batch. Here it is one launch
// (a thread per query) and one parallel loop on the CPU.
//
// Checks: shapes, dtypes and devices always; the runs' bounds (first >= 0,
// length >= 0, first + length <= S) on the CPU. The CUDA kernel clamps a run
// to [0, S) instead of reading out of bounds (the caller passes its graph's
// own row pointers).
#include <torch/library.h>

namespace fusesample {

TORCH_LIBRARY_FRAGMENT(fusesample, m) {
  m.def("segment_search(Tensor sorted, Tensor first, Tensor length, "
        "Tensor value, bool upper) -> Tensor");
}

}  // namespace fusesample
