// The value checks of value_checks.h. One translation unit: the scans, the
// cache and their headers stay out of every kernel file that includes
// checks.h (in the CUDA build they had made each .cu file 25% slower to
// compile).
#include <ATen/core/Tensor.h>
#include <ATen/TensorOperators.h>
#include <ATen/ops/aminmax.h>
#ifdef WITH_CUDA
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#endif

#include <cstdint>
#include <limits>
#include <mutex>
#include <utility>
#include <vector>

#include "value_checks.h"

namespace fusesample {

namespace {

// Whether the host may read t's values now: CPU tensors always; CUDA tensors
// only where the caller allows it (`device`) and t's device's current stream
// is not being captured into a CUDA graph (a read there ends the capture).
bool readable(const at::Tensor& t, bool device) {
  if (t.is_cpu()) return true;
#ifdef WITH_CUDA
  if (device && t.is_cuda()) {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    C10_CUDA_CHECK(cudaStreamIsCapturing(
        c10::cuda::getCurrentCUDAStream(t.device().index()).stream(), &status));
    return status == cudaStreamCaptureStatusNone;
  }
#endif
  (void)device;
  return false;
}

void pointer_values(const char* op, const char* ptr_name, const at::Tensor& ptr,
                    const char* idx_name, int64_t count) {
  const int64_t n = ptr.numel();
  TORCH_CHECK(n >= 1, op, ": '", ptr_name, "' needs at least one entry");
  const int64_t first = ptr[0].item<int64_t>();
  const int64_t last = ptr[n - 1].item<int64_t>();
  TORCH_CHECK(first == 0, op, ": '", ptr_name, "[0]' must be 0, got ", first);
  TORCH_CHECK(last == count, op, ": '", ptr_name, "[-1]' must equal the ",
              "number of entries of '", idx_name, "' (", count, "), got ", last);
  if (n > 1) {
    const auto step = ptr.narrow(0, 1, n - 1) - ptr.narrow(0, 0, n - 1);
    const auto down = (step < 0).nonzero();
    const int64_t bad = down.numel() ? down.view(-1)[0].item<int64_t>() : -1;
    TORCH_CHECK(bad < 0, op, ": '", ptr_name, "' must be non-decreasing, "
                "but ", ptr_name, "[", bad + 1, "] = ",
                ptr[bad + 1].item<int64_t>(), " < ", ptr_name, "[", bad,
                "] = ", ptr[bad].item<int64_t>());
  }
}

// Layouts that passed (value_checks.h: once per graph), remembered by their
// storages, places and version counters.

struct ValidatedLayout {
  c10::weak_intrusive_ptr<c10::StorageImpl> ptr_storage, idx_storage;
  int64_t ptr_offset, idx_offset, ptr_numel, idx_numel, ptr_stride, idx_stride;
  uint32_t ptr_version, idx_version;
  at::ScalarType idx_dtype;
  int64_t lo, hi;  // idx's range (lo > hi when idx is empty)
};

// A tensor's storage, place and version, or false where it cannot be
// tracked (inference tensors keep no version counter).
bool trackable(const at::Tensor& t) {
  return t.has_storage() && t.unsafeGetTensorImpl()->version_counter().enabled();
}

uint32_t version_of(const at::Tensor& t) {
  return t.unsafeGetTensorImpl()->version_counter().current_version();
}

bool same_place(const c10::weak_intrusive_ptr<c10::StorageImpl>& s,
                       int64_t offset, int64_t numel, int64_t stride,
                       uint32_t version, const at::Tensor& t) {
  // A weak pointer that has not expired still names the same storage object.
  return !s.expired() && s._unsafe_get_target() ==
             t.storage().unsafeGetStorageImpl() &&
         offset == t.storage_offset() && numel == t.numel() &&
         stride == (t.dim() == 1 ? t.stride(0) : 0) && version == version_of(t);
}

// Layouts that passed, newest last; a few graphs live at once (a model's,
// its transpose, a loader's), so a short list searched linearly suffices.
struct LayoutCache {
  std::mutex mutex;
  std::vector<ValidatedLayout> entries;
};

LayoutCache& layout_cache() {
  static LayoutCache cache;
  return cache;
}

constexpr size_t kLayoutCacheSize = 16;

std::pair<int64_t, int64_t> compressed_values(const char* op, const char* ptr_name,
                                              const at::Tensor& ptr, const char* idx_name,
                                              const at::Tensor& idx, int64_t idx_bound,
                                              bool device) {
  if (!readable(ptr, device) || !readable(idx, device)) return {0, -1};
  const bool track = trackable(ptr) && trackable(idx) &&
                     ptr.dim() == 1 && idx.dim() == 1;
  int64_t lo = 0, hi = -1;
  bool found = false;
  auto& cache = layout_cache();
  if (track) {
    std::lock_guard<std::mutex> lock(cache.mutex);
    for (const auto& e : cache.entries) {
      if (e.idx_dtype == idx.scalar_type() &&
          same_place(e.ptr_storage, e.ptr_offset, e.ptr_numel,
                             e.ptr_stride, e.ptr_version, ptr) &&
          same_place(e.idx_storage, e.idx_offset, e.idx_numel,
                             e.idx_stride, e.idx_version, idx)) {
        lo = e.lo, hi = e.hi, found = true;
        break;
      }
    }
  }
  if (!found) {
    pointer_values(op, ptr_name, ptr, idx_name, idx.numel());
    if (idx.numel() > 0) {
      auto minmax = at::aminmax(idx);
      lo = std::get<0>(minmax).item<int64_t>();
      hi = std::get<1>(minmax).item<int64_t>();
    }
    if (track) {
      std::lock_guard<std::mutex> lock(cache.mutex);
      auto& entries = cache.entries;
      if (entries.size() >= kLayoutCacheSize)
        entries.erase(entries.begin());
      entries.push_back(ValidatedLayout{
          ptr.storage().getWeakStorageImpl(), idx.storage().getWeakStorageImpl(),
          ptr.storage_offset(), idx.storage_offset(), ptr.numel(), idx.numel(),
          ptr.stride(0), idx.stride(0), version_of(ptr),
          version_of(idx), idx.scalar_type(), lo, hi});
    }
  }
  if (idx.numel() == 0) return {0, -1};
  if (idx_bound == std::numeric_limits<int64_t>::max()) {
    TORCH_CHECK(lo >= 0, op, ": '", idx_name, "' holds id ", lo,
                "; ids must be >= 0");
  } else {
    TORCH_CHECK(lo >= 0 && hi < idx_bound, op, ": '", idx_name,
                "' holds ids in [", lo, ", ", hi, "] but must lie in [0, ",
                idx_bound, ")");
  }
  return {lo, hi};
}

}  // namespace

void check_pointer_values_cpu(const char* op, const char* ptr_name, const at::Tensor& ptr,
                              const char* idx_name, int64_t count) {
  if (readable(ptr, /*device=*/false)) pointer_values(op, ptr_name, ptr, idx_name, count);
}

void check_graph_pointer_values(const char* op, const char* ptr_name, const at::Tensor& ptr,
                                const char* idx_name, int64_t count) {
  if (readable(ptr, /*device=*/true)) pointer_values(op, ptr_name, ptr, idx_name, count);
}

std::pair<int64_t, int64_t> check_compressed_values_cpu(const char* op, const char* ptr_name,
                                                        const at::Tensor& ptr,
                                                        const char* idx_name,
                                                        const at::Tensor& idx,
                                                        int64_t idx_bound) {
  return compressed_values(op, ptr_name, ptr, idx_name, idx, idx_bound, /*device=*/false);
}

std::pair<int64_t, int64_t> check_graph_values(const char* op, const char* ptr_name,
                                               const at::Tensor& ptr, const char* idx_name,
                                               const at::Tensor& idx, int64_t idx_bound) {
  return compressed_values(op, ptr_name, ptr, idx_name, idx, idx_bound, /*device=*/true);
}

}  // namespace fusesample
