// Checks of a compressed graph's values: a pointer array starts at 0, never
// decreases and ends at the number of entries it splits; every index lies in
// [0, bound). A kernel following a bad layout reads or writes out of bounds,
// so the ops check before any pointer is followed.
//
// The scan is O(len(ptr) + len(idx)) and reads the values on the host, so it
// runs once per graph: a layout whose storages are still alive and whose
// version counters are unchanged since it passed is not scanned again (the
// loaders and layers call an op with one graph for every batch); only the
// indices' [min, max] is kept, so a later call with another bound (x's rows,
// say) is still checked.
//
// - check_graph_values / check_graph_pointer_values: the whole graph an op
//   samples or multiplies. CUDA tensors are scanned too: one host sync the
//   first time a graph is seen, none after; not while the stream is being
//   captured into a CUDA graph (the capture would end), when the layout is
//   trusted (a graph used eagerly first has been checked).
// - check_compressed_values_cpu: layouts made per batch (ShaDow's
//   neighbour lists): CPU tensors only, since a per-batch scan of a CUDA
//   tensor would be a host sync per batch; their CUDA kernels take them from
//   our own ops.
//
// Each returns the indices' [min, max] ({0, -1} when empty or not scanned);
// a caller that words its own bound check passes idx_bound = INT64_MAX.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <utility>

namespace fusesample {

std::pair<int64_t, int64_t> check_graph_values(const char* op, const char* ptr_name,
                                               const at::Tensor& ptr, const char* idx_name,
                                               const at::Tensor& idx, int64_t idx_bound);

void check_graph_pointer_values(const char* op, const char* ptr_name, const at::Tensor& ptr,
                                const char* idx_name, int64_t count);

std::pair<int64_t, int64_t> check_compressed_values_cpu(const char* op, const char* ptr_name,
                                                        const at::Tensor& ptr,
                                                        const char* idx_name,
                                                        const at::Tensor& idx,
                                                        int64_t idx_bound);

}  // namespace fusesample
