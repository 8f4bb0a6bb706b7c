// The launch interface between fusesample::spmm's CUDA op (spmm_kernel.cu)
// and its kernels, compiled one element type per translation unit
// (spmm_kernel_<dtype>.cu): the kernels' 128 instantiations per element
// type made spmm_kernel.cu the longest compile of the CUDA build (65 s of
// its 122 s on 16 cores), and split four ways they build side by side.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

#include "../spmm_common.h"

namespace fusesample {
namespace spmm_kernels {

// One call's contiguous inputs and its output, checked by the op.
struct SpmmLaunch {
  at::Tensor rowptr, col, value, x, out;  // value undefined: all ones
  int64_t heads;
  bool mean;
  SpmmVariant variant;
  int64_t hub_threshold;
  at::Tensor hub_chunks;  // [K, 3], defined for the hub-split variants
  int64_t lanes;
  at::Tensor light_rows;  // undefined: rows in index order
};

// Runs the variant for x's element type scalar_t (defined in
// spmm_kernel_<dtype>.cu for float, double, c10::Half, c10::BFloat16).
template <typename scalar_t>
void run(const SpmmLaunch& a);

extern template void run<float>(const SpmmLaunch&);
extern template void run<double>(const SpmmLaunch&);
extern template void run<c10::Half>(const SpmmLaunch&);
extern template void run<c10::BFloat16>(const SpmmLaunch&);

}  // namespace spmm_kernels
}  // namespace fusesample
