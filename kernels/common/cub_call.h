// What every caller of a CUB device-wide algorithm writes: the key width of
// a radix sort over node ids, and the two calls CUB wants (the size of its
// temporary storage, then the work) with that storage from the caching
// allocator, so no host synchronisation.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAException.h>

#include <algorithm>
#include <cstdint>

namespace fusesample {

// The bits of ids in [0, count): a radix sort's end_bit (at least 1).
inline int radix_key_bits(int64_t count) {
  int bits = 1;
  while (bits < 63 && (int64_t{1} << bits) < count) ++bits;
  return bits;
}

// call(temp, bytes) is the CUB call: with temp == nullptr it sets `bytes`.
// The storage is at least one byte, so the second call is never mistaken
// for a size query.
template <class Call>
void cub_call(const at::TensorOptions& options, Call&& call) {
  size_t bytes = 0;
  C10_CUDA_CHECK(call(nullptr, bytes));
  const auto temp = at::empty({static_cast<int64_t>(std::max<size_t>(bytes, 1))},
                              options.dtype(at::kByte));
  C10_CUDA_CHECK(call(temp.data_ptr(), bytes));
}

}  // namespace fusesample
