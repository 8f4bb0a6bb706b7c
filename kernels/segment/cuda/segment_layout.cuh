// What the CUDA segment kernels share (segment_aggregate, its backward,
// segment_slot_dot): vector loads of a row's features and the reading of a
// row's slots from a per-batch layout, checked as it is read (a bad pointer
// clamped and reported in the error word: no host sync).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

#include "../../common/error_word.cuh"

namespace fusesample {
namespace {

template <typename scalar_t, int V>
struct alignas(sizeof(scalar_t) * V) Vec {
  scalar_t v[V];
};

template <typename scalar_t, int V, typename acc_t>
__device__ __forceinline__ void load(const scalar_t* p, acc_t (&out)[V]) {
  const Vec<scalar_t, V> v = *reinterpret_cast<const Vec<scalar_t, V>*>(p);
#pragma unroll
  for (int i = 0; i < V; ++i) out[i] = static_cast<acc_t>(v.v[i]);
}

// Row r's slots, clamped into [0, E] and in order; a pointer that needed the
// clamp (or a first/last entry other than 0/E) is reported.
__device__ __forceinline__ void extent(const int64_t* __restrict__ ptr, int64_t r, int64_t R,
                                       int64_t E, bool reporter,
                                       unsigned long long* error, int64_t& e0, int64_t& e1) {
  const int64_t p0 = ptr[r], p1 = ptr[r + 1];
  e0 = p0 < 0 ? 0 : (p0 > E ? E : p0);
  e1 = p1 < e0 ? e0 : (p1 > E ? E : p1);
  if (reporter && (e0 != p0 || e1 != p1 || (r == 0 && p0 != 0) || (r == R - 1 && p1 != E)))
    report(error, kBadPointer, r);
}

bool aligned(const at::Tensor& t, int64_t bytes) {
  return reinterpret_cast<uintptr_t>(t.data_ptr()) % bytes == 0;
}

}  // namespace
}  // namespace fusesample
