// fusesample::segment_aggregate and its backward -- aggregation over a
// mini-batch's edges grouped by target: the op behind the mini-batch layers
// (pyg_fusesample.nn.SAGEConv, GCNConv, GATConv, RGCNConv).
//
// A sampled batch is a new graph every step, so nothing here may cost a host
// synchronisation or an O(E) scan on the host per call (unlike spmm, whose
// whole-graph layout is checked once per graph): the layouts are checked
// where they are read, inside the kernels.
//
// segment_aggregate(ptr, src, value, x, reduce) -> (out, arg):
//   inputs   ptr [R+1] int64: row r aggregates slots ptr[r]:ptr[r+1] of src;
//            src [E] int32/int64 in [0, N): the row of x each slot reads;
//            value [E] or [E, H] (x's dtype) or None (all ones): slot
//            weights, head h weighing columns [h*C, (h+1)*C) of x (F = H*C);
//            x [N, F] float64/32/16/bfloat16; reduce 'sum' | 'mean' | 'max'
//            ('mean' divides by the row's slot count; 'max' takes no value).
//   outputs  out [R, F] in x's dtype (accumulated in float32, float64
//            stays); a row without slots is 0 (PyG's empty aggregation);
//            arg [R, F] int64 for 'max': the slot whose element won (the
//            first among ties), -1 for an empty row; [0] otherwise.
//   bad layouts: the CPU kernel raises (naming 'ptr' or 'src'). The CUDA
//            kernel reads each row's [begin, end) clamped into [0, E] and
//            skips a source outside [0, N); either, and a ptr not starting
//            at 0 or not ending at E, is recorded in the device's error word
//            (common/error_word.cuh) without a sync, for the layers'
//            DeviceErrorWatch to raise. Nothing is read out of bounds.
//   determinism: every output element is summed by one thread in slot order.
//
// segment_aggregate_backward(ptr, src, dst, value, grad, arg, num_src,
//                            reduce) -> grad_x [num_src, F]:
//   the gradient of segment_aggregate in x: grad_x[j] sums, over the slots s
//   reading row j (src[s] == j), grad[dst[s]] times value[s] (per head) and,
//   for 'mean', 1 / (row dst[s]'s slot count); for 'max' only the elements
//   slot s won (arg[dst[s], f] == s). dst [E] is each slot's row (sorted,
//   as the layout has it). Every element is summed in slot order by one
//   thread: deterministic, no float atomics. The CUDA kernel groups the
//   slots by source with a radix sort over the bits of num_src (a stable
//   sort, so slot order is kept), all on the device.
//   bad values: the CPU kernel raises; the CUDA kernel skips a slot whose
//   src or dst is out of range and reports it in the error word.
//   order_key, order_slot, order_ptr (optional, all or none): the grouping
//   by source, as segment_source_order returns it, of these src and
//   num_src or of a longer src' that src is a prefix of (src ==
//   src'[:E]) and a num_src' >= num_src, so that every use of one batch's
//   edges (an aggregation and a gather of per-source values, GATConv's;
//   the trimmed layers' prefixes of the edge list) shares one sort. The
//   CUDA kernel reads it instead of sorting: sources num_src and above
//   and slots E and above are skipped (they are src''s, not src's), and
//   its values are clamped where they are read (an order of another src
//   gives wrong sums, never an access out of bounds). With the order of a
//   longer src' a source's sum is cut into other partial sums than with
//   src's own: equal up to rounding. The CPU kernel, which needs no sort,
//   checks its shapes and ignores it.
//
// segment_source_order(src, num_src) -> (key, slot, ptr):
//   src [E] int32/int64 in [0, num_src): the slots (their sources).
//   key [E] int32: the sources in ascending order (a source outside
//   [0, num_src) counts as num_src: last, reported in the CUDA error word;
//   the CPU kernel raises); slot [E] int64: the slots in that order, stable
//   (a source's slots in slot order); ptr [num_src + 1] int64: source j's
//   slots are positions ptr[j]:ptr[j + 1]. One radix sort over the bits of
//   num_src on CUDA, no host synchronisation.
#include <torch/library.h>

TORCH_LIBRARY_FRAGMENT(fusesample, m) {
  m.def(
      "segment_aggregate(Tensor ptr, Tensor src, Tensor? value, Tensor x, "
      "str reduce='sum') -> (Tensor out, Tensor arg)");
  m.def(
      "segment_aggregate_backward(Tensor ptr, Tensor src, Tensor dst, "
      "Tensor? value, Tensor grad, Tensor arg, SymInt num_src, str reduce, "
      "Tensor? order_key=None, Tensor? order_slot=None, Tensor? order_ptr=None) -> Tensor");
  m.def(
      "segment_source_order(Tensor src, SymInt num_src) -> (Tensor key, Tensor slot, "
      "Tensor ptr)");
}
