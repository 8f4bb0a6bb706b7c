// CUDA kernels of fusesample::gather_rows and gather_rows_cached (contract:
// ../gather_rows.cpp). Rows are copied as vectors of the widest width that
// divides the row size and the base addresses (16, 8, 4, 2 or 1 bytes); a
// thread per vector, so consecutive threads read consecutive bytes of a row
// -- which also makes the reads of a pinned host 'src' (zero-copy over the
// host link) whole 128-byte requests once a row is 128 bytes or more.
//
// Rows of a pinned host 'src' (>= 512 bytes a row, enough of them) are
// visited in ascending id order: a radix sort of the ids (only the bits
// src's row count needs) carries each row's position, where the kernel
// writes it. On an H200, 200,000 rows drawn by degree from a 2.45M-row
// table reached 0.80-0.83 of the host link's copy bandwidth in the batch's
// order and 0.92-0.93 ascending, for rows of 512 and 1024 bytes (256-byte
// rows: 0.92 either way, so they are not sorted); the sort takes
// 0.13-0.16 ms of the 2-4.5 ms (docs/sampler.md). Reads that are close
// in the host's address space share the GPU's translations of host pages
// and the host's DRAM pages.
//
// A pinned host tensor's address is valid on the device: with unified
// virtual addressing (every 64-bit CUDA platform) memory that cudaHostAlloc
// pinned -- PyTorch's pin_memory() -- is mapped into the device's address
// space at the same address.
#include <ATen/core/Tensor.h>
#include <ATen/ops/aminmax.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include <cub/device/device_radix_sort.cuh>

#include <cstdint>
#include <limits>

#include "../../common/checks.h"
#include "../../common/cub_call.h"
#include "../../common/grid.h"

namespace fusesample {
namespace {

constexpr const char* kOp = "fusesample::gather_rows";
constexpr const char* kOpCached = "fusesample::gather_rows_cached";
constexpr int kThreads = 256;
constexpr int64_t kAscendingMinRowBytes = 512;
constexpr int64_t kAscendingMinRows = 4096;

// kCached: rows whose slot_of entry is >= 0 come from `cache`, and the warp
// adds how many of its rows did to *hits (one atomic per warp and pass).
// position (or nullptr: row r goes to row r): the row of dst that index[r]
// is copied to, when index is the batch's ids sorted.
template <typename vec_t, bool kCached>
__global__ void gather_rows_kernel(const vec_t* __restrict__ src,
                                   const vec_t* __restrict__ cache,
                                   const int32_t* __restrict__ slot_of,
                                   const int64_t* __restrict__ index,
                                   const int32_t* __restrict__ position,
                                   vec_t* __restrict__ dst, int64_t rows,
                                   int64_t vecs_per_row, int64_t src_rows,
                                   int64_t cache_rows,
                                   unsigned long long* __restrict__ hits) {
  const int64_t total = rows * vecs_per_row;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < total; i += stride) {
    const int64_t r = i / vecs_per_row;
    const int64_t k = i - r * vecs_per_row;
    const int64_t s = index[r];
    vec_t v{};
    bool hit = false;
    if (s >= 0 && s < src_rows) {
      const int32_t c = kCached ? slot_of[s] : -1;
      // (a slot past the cache is a miss: src holds the same row, and
      // checking cache_slot's values on the host would cost a sync)
      hit = c >= 0 && c < cache_rows;
      v = hit ? cache[static_cast<int64_t>(c) * vecs_per_row + k]
              : src[s * vecs_per_row + k];
    }
    dst[position == nullptr ? i : position[r] * vecs_per_row + k] = v;
    if (kCached) {
      const unsigned active = __activemask();
      const unsigned counted = __ballot_sync(active, hit && k == 0);
      if (counted != 0 && (threadIdx.x & 31) == __ffs(active) - 1)
        atomicAdd(hits, static_cast<unsigned long long>(__popc(counted)));
    }
  }
}

template <typename vec_t, bool kCached>
void launch(const at::Tensor& src, const at::Tensor* cache,
            const at::Tensor* cache_slot, const at::Tensor& index,
            const at::Tensor* position, at::Tensor& out, int64_t row_bytes,
            at::Tensor* hits) {
  const int64_t rows = index.numel();
  const int64_t vecs = row_bytes / static_cast<int64_t>(sizeof(vec_t));
  const int64_t total = rows * vecs;
  const int64_t blocks = grid_blocks(total, kThreads, 16);
  gather_rows_kernel<vec_t, kCached><<<blocks, kThreads, 0,
                                       at::cuda::getCurrentCUDAStream()>>>(
      reinterpret_cast<const vec_t*>(src.data_ptr()),
      kCached ? reinterpret_cast<const vec_t*>(cache->data_ptr()) : nullptr,
      kCached ? cache_slot->data_ptr<int32_t>() : nullptr,
      index.data_ptr<int64_t>(),
      position ? position->data_ptr<int32_t>() : nullptr,
      reinterpret_cast<vec_t*>(out.data_ptr()),
      rows, vecs, src.size(0), kCached ? cache->size(0) : 0,
      kCached ? reinterpret_cast<unsigned long long*>(hits->data_ptr<int64_t>())
              : nullptr);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// A host src is read where it is: it must be contiguous already (a copy
// would be neither pinned nor free).
at::Tensor contiguous_src(const char* op, const at::Tensor& src) {
  if (src.is_cuda()) return src.contiguous();
  TORCH_CHECK(src.is_contiguous(), op,
              ": a pinned host 'src' must be contiguous (it is read in place "
              "by the GPU)");
  return src;
}

// The ids in ascending order and the position each came from: a stable
// radix sort over the bits below src's row count (ids outside [0, rows)
// land anywhere and are still written as zeros by the kernel). No host
// sync: the temporary storage comes from the caching allocator.
std::pair<at::Tensor, at::Tensor> ascending(const at::Tensor& index,
                                            int64_t src_rows) {
  const int rows = static_cast<int>(index.numel());
  const int end_bit = radix_key_bits(src_rows);
  auto ids = at::empty_like(index);
  auto order = at::arange(rows, index.options().dtype(at::kInt));
  auto position = at::empty_like(order);
  const auto stream = at::cuda::getCurrentCUDAStream();
  cub_call(index.options(), [&](void* temp, size_t& bytes) {
    return cub::DeviceRadixSort::SortPairs(
        temp, bytes, index.data_ptr<int64_t>(), ids.data_ptr<int64_t>(),
        order.data_ptr<int32_t>(), position.data_ptr<int32_t>(), rows, 0,
        end_bit, stream);
  });
  return {ids, position};
}

// The gather with the widest vector the addresses and row size allow.
template <bool kCached>
at::Tensor gather(const at::Tensor& src, const at::Tensor* cache,
                  const at::Tensor* cache_slot, const at::Tensor& index_in,
                  at::Tensor* hits) {
  auto sizes = src.sizes().vec();
  sizes[0] = index_in.numel();
  auto out = at::empty(sizes, src.options().device(index_in.device()));
  const int64_t row_bytes = src.numel() == 0 ? 0
      : static_cast<int64_t>(src.nbytes() / src.size(0));
  if (out.numel() == 0 || row_bytes == 0) return out;
  at::Tensor index = index_in, position;
  if (!src.is_cuda() && row_bytes >= kAscendingMinRowBytes &&
      index.numel() >= kAscendingMinRows &&
      index.numel() <= std::numeric_limits<int32_t>::max())
    std::tie(index, position) = ascending(index_in, src.size(0));
  const at::Tensor* pos = position.defined() ? &position : nullptr;
  auto a = reinterpret_cast<std::uintptr_t>(src.data_ptr()) |
           reinterpret_cast<std::uintptr_t>(out.data_ptr()) |
           static_cast<std::uintptr_t>(row_bytes);
  if (kCached) a |= reinterpret_cast<std::uintptr_t>(cache->data_ptr());
  if (a % 16 == 0) launch<uint4, kCached>(src, cache, cache_slot, index, pos, out, row_bytes, hits);
  else if (a % 8 == 0) launch<uint2, kCached>(src, cache, cache_slot, index, pos, out, row_bytes, hits);
  else if (a % 4 == 0) launch<uint32_t, kCached>(src, cache, cache_slot, index, pos, out, row_bytes, hits);
  else if (a % 2 == 0) launch<uint16_t, kCached>(src, cache, cache_slot, index, pos, out, row_bytes, hits);
  else launch<uint8_t, kCached>(src, cache, cache_slot, index, pos, out, row_bytes, hits);
  return out;
}

at::Tensor gather_rows_cuda(const at::Tensor& src, const at::Tensor& index,
                            bool check_index) {
  check_gather_rows(kOp, src, index);
  c10::cuda::CUDAGuard guard(index.device());
  if (check_index && index.numel() > 0) {
    const auto minmax = at::aminmax(index);  // the documented host sync
    const int64_t lo = std::get<0>(minmax).item<int64_t>();
    const int64_t hi = std::get<1>(minmax).item<int64_t>();
    TORCH_CHECK(lo >= 0 && hi < src.size(0), kOp, ": 'index' holds ids in [",
                lo, ", ", hi, "] but must lie in [0, ", src.size(0), ")");
  }
  return gather<false>(contiguous_src(kOp, src), nullptr, nullptr,
                       index.contiguous(), nullptr);
}

at::Tensor gather_rows_cached_cuda(const at::Tensor& src, const at::Tensor& cache,
                                   const at::Tensor& cache_slot,
                                   const at::Tensor& index, at::Tensor& hits) {
  check_row_cache(kOpCached, src, cache, cache_slot, index, hits);
  c10::cuda::CUDAGuard guard(index.device());
  const auto cache_c = cache.contiguous();
  const auto slot_c = cache_slot.contiguous();
  return gather<true>(contiguous_src(kOpCached, src), &cache_c, &slot_c,
                      index.contiguous(), &hits);
}

}  // namespace

TORCH_LIBRARY_IMPL(fusesample, CUDA, m) {
  m.impl("gather_rows", &gather_rows_cuda);
  m.impl("gather_rows_cached", &gather_rows_cached_cuda);
}

}  // namespace fusesample
