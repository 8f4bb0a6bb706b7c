// Warp geometry of a grid-stride loop that gives each work item a warp:
// this warp's global index and the number of warps in the grid, in 64-bit
// (blocks x threads overflows int32 on a large persistent grid). Plain CUDA.
#pragma once

#include <cstdint>

namespace fusesample {

__device__ __forceinline__ int64_t global_warp() {
  return (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
}

__device__ __forceinline__ int64_t warp_count() {
  return (static_cast<int64_t>(gridDim.x) * blockDim.x) >> 5;
}

}  // namespace fusesample
