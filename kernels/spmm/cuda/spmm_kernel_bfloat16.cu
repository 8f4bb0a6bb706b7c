// fusesample::spmm's CUDA kernels for bfloat16 features (spmm_launch.h says
// why each element type is a translation unit of its own).
#include "spmm_kernels.cuh"

namespace fusesample {
namespace spmm_kernels {
template void run<c10::BFloat16>(const SpmmLaunch&);
}  // namespace spmm_kernels
}  // namespace fusesample
