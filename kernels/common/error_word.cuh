// The per-device error word of the CUDA kernels that take ids they cannot
// check on the host without a synchronisation (sample_aggregate's targets,
// segment_aggregate's per-batch layouts).
//
// Ids out of range must not read out of bounds, and a device-side assert
// would lose the process's CUDA context; checking them on the host would
// cost a synchronisation per call. So these kernels treat a bad id as an
// absent one (padding, an empty slot, an empty row) and record the first
// such id in the device's word: word[0] = 0 (none) or the kind below,
// word[1] = the id. The word persists (its address may be baked into CUDA
// graphs); fusesample::sample_aggregate_error(like) returns it, and the
// Python layers copy it to pinned host memory asynchronously after a step
// and raise at a later call (pyg_fusesample.ops.aggregate.DeviceErrorWatch).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace fusesample {

// kinds: a target id, a source id, a layout pointer (a row's [begin, end)
// outside [0, nnz] or decreasing, or a pointer array not spanning its ids).
constexpr unsigned long long kBadTarget = 1, kBadSource = 2, kBadPointer = 3;

// The device's word ([2] int64, zeros until an error); undefined where it
// does not exist yet and the stream is being captured (allocating inside a
// capture would put it in the graph's private pool): the kernels then run
// without reporting.
at::Tensor error_word(const at::Device& device, bool create = true);

// The word's address for a kernel (nullptr: do not report).
inline unsigned long long* error_word_ptr(const at::Device& device) {
  at::Tensor word = error_word(device);
  return word.defined() ? reinterpret_cast<unsigned long long*>(word.data_ptr<int64_t>())
                        : nullptr;
}

__device__ __forceinline__ void report(unsigned long long* word, unsigned long long kind,
                                       int64_t id) {
  if (word != nullptr && atomicCAS(word, 0ull, kind) == 0ull)
    reinterpret_cast<int64_t*>(word)[1] = id;
}

}  // namespace fusesample
