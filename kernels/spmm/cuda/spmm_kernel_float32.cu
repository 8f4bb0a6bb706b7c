// fusesample::spmm's CUDA kernels for float32 features (spmm_launch.h says
// why each element type is a translation unit of its own).
#include "spmm_kernels.cuh"

namespace fusesample {
namespace spmm_kernels {
template void run<float>(const SpmmLaunch&);
}  // namespace spmm_kernels
}  // namespace fusesample
