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
#include <optional>
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

// Where a tensor's values live and which version they are at: a layout is
// the same as one checked before while its storage is still alive, its place
// in it is the same and its version counter has not moved.
struct Place {
  c10::weak_intrusive_ptr<c10::StorageImpl> storage;
  int64_t offset, numel, stride;
  uint32_t version;

  // Whether t can be tracked (inference tensors keep no version counter).
  static bool trackable(const at::Tensor& t) {
    return t.dim() == 1 && t.has_storage() &&
           t.unsafeGetTensorImpl()->version_counter().enabled();
  }

  static Place of(const at::Tensor& t) {
    return {t.storage().getWeakStorageImpl(), t.storage_offset(), t.numel(), t.stride(0),
            t.unsafeGetTensorImpl()->version_counter().current_version()};
  }

  bool holds(const at::Tensor& t) const {
    // A weak pointer that has not expired still names the same storage object.
    return !storage.expired() && storage._unsafe_get_target() == t.storage().unsafeGetStorageImpl() &&
           offset == t.storage_offset() && numel == t.numel() && stride == t.stride(0) &&
           version == t.unsafeGetTensorImpl()->version_counter().current_version();
  }
};

// A layout that passed: its pointers (ending at `count`) and, where checked,
// its indices with their range (lo > hi when there are none).
struct Checked {
  Place ptr;
  std::optional<Place> idx;
  at::ScalarType idx_dtype;
  int64_t count, lo, hi;
};

// Layouts that passed, newest last; a few graphs live at once (a model's,
// its transpose, a loader's), so a short list searched linearly suffices.
constexpr size_t kCacheSize = 16;
std::mutex cache_mutex;
std::vector<Checked> cache;

// idx undefined: the pointers alone (over `count` entries).
const Checked* find(const at::Tensor& ptr, const at::Tensor& idx, int64_t count) {
  for (const auto& c : cache)
    if (c.count == count && c.idx.has_value() == idx.defined() && c.ptr.holds(ptr) &&
        (!idx.defined() || (c.idx_dtype == idx.scalar_type() && c.idx->holds(idx))))
      return &c;
  return nullptr;
}

// idx's [min, max] over a layout that is checked once per graph; {0, -1}
// where the values cannot be read now (value_checks.h).
std::pair<int64_t, int64_t> layout_values(const char* op, const char* ptr_name,
                                          const at::Tensor& ptr, const char* idx_name,
                                          const at::Tensor& idx, int64_t count, bool device) {
  if (!readable(ptr, device) || (idx.defined() && !readable(idx, device))) return {0, -1};
  const bool track = Place::trackable(ptr) && (!idx.defined() || Place::trackable(idx));
  if (track) {
    std::lock_guard<std::mutex> lock(cache_mutex);
    if (const Checked* c = find(ptr, idx, count)) return {c->lo, c->hi};
  }
  pointer_values(op, ptr_name, ptr, idx_name, count);
  int64_t lo = 0, hi = -1;
  if (idx.defined() && idx.numel() > 0) {
    auto minmax = at::aminmax(idx);
    lo = std::get<0>(minmax).item<int64_t>();
    hi = std::get<1>(minmax).item<int64_t>();
  }
  if (track) {
    std::lock_guard<std::mutex> lock(cache_mutex);
    if (cache.size() >= kCacheSize) cache.erase(cache.begin());
    cache.push_back(Checked{Place::of(ptr),
                            idx.defined() ? std::optional<Place>(Place::of(idx)) : std::nullopt,
                            idx.defined() ? idx.scalar_type() : at::ScalarType::Undefined, count,
                            lo, hi});
  }
  return {lo, hi};
}

std::pair<int64_t, int64_t> compressed_values(const char* op, const char* ptr_name,
                                              const at::Tensor& ptr, const char* idx_name,
                                              const at::Tensor& idx, int64_t idx_bound,
                                              bool device) {
  const auto [lo, hi] = layout_values(op, ptr_name, ptr, idx_name, idx, idx.numel(), device);
  if (lo > hi) return {0, -1};  // no ids, or not read now
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

void check_graph_pointer_values(const char* op, const char* ptr_name, const at::Tensor& ptr,
                                const char* idx_name, int64_t count) {
  layout_values(op, ptr_name, ptr, idx_name, at::Tensor(), count, /*device=*/true);
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
