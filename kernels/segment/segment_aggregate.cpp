// fusesample::segment_aggregate, segment_max_backward -- aggregation over a
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
// segment_max_backward(ptr_t, dst_t, slot_t, arg, grad, num_src) -> grad_x:
//   the gradient of 'max' in x, deterministic without atomics: the slots
//   transposed (grouped by source: slot_t's entries ptr_t[j]:ptr_t[j+1] are
//   the slots reading x[j], dst_t their rows), grad_x[j, f] = sum of
//   grad[dst_t[i], f] over those slots i that won element f
//   (arg[dst_t[i], f] == slot_t[i]), in slot order. Bad layouts as above.
#include <torch/library.h>

TORCH_LIBRARY_FRAGMENT(fusesample, m) {
  m.def(
      "segment_aggregate(Tensor ptr, Tensor src, Tensor? value, Tensor x, "
      "str reduce='sum') -> (Tensor out, Tensor arg)");
  m.def(
      "segment_max_backward(Tensor ptr_t, Tensor dst_t, Tensor slot_t, "
      "Tensor arg, Tensor grad, int num_src) -> Tensor");
}
