// fusesample::segment_cumsum -- per-segment inclusive prefix sums of float64
// values, each segment summed from zero in order: the weight prefix sums the
// weighted samplers draw from (sampler/rule_graph.py).
//
// Contract: ptr [S + 1] int64 (monotone, 0 .. V), values [V] float64 on the
// CPU. Returns [V] float64: out[i] = values[ptr[s]] + ... + values[i] for
// the segment s holding i, added left to right. So a segment's sums depend
// on its own values only (not on the segments before it, as a global
// cumulative sum minus each segment's base would): a partition's part and
// the whole graph give the same bits for the same in-edges.
#include <torch/library.h>

TORCH_LIBRARY_FRAGMENT(fusesample, m) {
  m.def("segment_cumsum(Tensor ptr, Tensor values) -> Tensor");
}
