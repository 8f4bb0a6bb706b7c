// fusesample::gather_rows -- out[i] = src[index[i]] along dim 0, for any
// dtype: the loader's slicing of node and edge attributes.
//
// Contract: src [N, ...] (any dtype), index [M] int64; returns [M, ...]. With
// check_index=True an index outside [0, N) raises (on CUDA this costs a host
// sync); with check_index=False the caller guarantees the range (the loader
// passes sampler output) and the CUDA kernel writes zeros for a bad index
// rather than reading out of bounds. The CUDA kernel copies rows with the
// widest aligned vector (up to 16 bytes), which PyTorch's generic gather does
// not reach for rows of a few hundred bytes.
#include <torch/library.h>

TORCH_LIBRARY_FRAGMENT(fusesample, m) {
  m.def("gather_rows(Tensor src, Tensor index, bool check_index=True) -> Tensor");
}
