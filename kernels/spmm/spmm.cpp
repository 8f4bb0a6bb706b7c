// fusesample::spmm, sddmm, csr_softmax -- the sparse kernels behind
// AutoSpMMConv (AutoSAGE's idea: several input-aware CUDA variants, chosen
// per graph by pyg_fusesample.autotune against cuSPARSE).
//
// spmm:  out = A @ x for a CSR matrix A (rows aggregate):
//   inputs   rowptr [R+1] int64, col [E] int32/int64 in [0, x.size(0)),
//            value [E] or [E, H] (x's dtype) or None (all ones), x [N, F]
//            float64/32/16/bfloat16 (F = H * C when value is [E, H]: head h
//            weighs columns [h*C, (h+1)*C)), reduce 'sum' | 'mean' (mean
//            divides by the row's non-zero count), variant (CUDA: 'warp' --
//            a warp per row, lanes across feature vectors; 'subwarp' -- rows
//            packed several per warp, 8 lanes a row (or `lanes` when more);
//            'hub' --
//            'warp' for rows with <= hub_threshold non-zeros plus the
//            heavier rows in chunks of non-zeros, a thread block per chunk;
//            'hub-subwarp' -- the same split with the light rows packed as
//            in 'subwarp'; the CPU kernel is one kernel whatever the variant),
//            hub_threshold, hub_rows [K, 3] int64: the chunks (row, begin,
//            end) of every row with more than hub_threshold non-zeros, a
//            row's chunks adjacent (CSRGraph.hub_chunks; required by 'hub'
//            and 'hub-subwarp'),
//            lanes (CUDA: lanes across a row's feature vectors, a power of
//            two <= 32; the rest of the row's lanes split its non-zeros; 0
//            picks the fewest lanes that cover the row with 4 vectors each;
//            in 'subwarp' and 'hub-subwarp' a row has max(8, lanes) lanes),
//            light_rows [L] int64 (optional, 'hub' and 'hub-subwarp' on
//            CUDA): every row with <= hub_threshold non-zeros, in the order
//            the light-row kernel takes them (CSRGraph.light_rows: by
//            non-zero count, so the rows that share a warp are about as
//            long); not range-checked (that would cost a host sync), ids
//            outside [0, R) are skipped; without it rows go in index order.
//   output   [R, F] in x's dtype, accumulated in float32 (float64 stays).
//   every variant computes the same sums; they differ in summation order
//   only ('hub' splits a row over warps), so results agree to rounding.
//
// sddmm: out[e] = <a[row(e)], b[col(e)]> per head: a [R, H, C] (or [R, C]),
//   b [N, H, C] (or [N, C]) -> [E, H] (or [E]); float32 accumulation.
//
// csr_softmax: a numerically stable softmax of value [E] / [E, H] over each
//   row's non-zeros (per head); csr_softmax_backward(rowptr, out, grad) its
//   vector-Jacobian product. Rows without non-zeros produce nothing.
#include <torch/library.h>

TORCH_LIBRARY_FRAGMENT(fusesample, m) {
  m.def(
      "spmm(Tensor rowptr, Tensor col, Tensor? value, Tensor x, "
      "str reduce='sum', str variant='warp', int hub_threshold=-1, "
      "Tensor? hub_rows=None, int lanes=0, Tensor? light_rows=None) -> Tensor");
  m.def("sddmm(Tensor rowptr, Tensor col, Tensor a, Tensor b) -> Tensor");
  m.def("csr_softmax(Tensor rowptr, Tensor value) -> Tensor");
  m.def("csr_softmax_backward(Tensor rowptr, Tensor out, Tensor grad) -> Tensor");
}
