// CUDA kernel of fusesample::dist_relabel (contract: ../dist_hop.cpp; the
// composite there, a stable sort of node ++ src, is the reference and the
// CPU implementation). A hash table instead of the sort: on a GPU the
// composite was ~20 launches a hop (a radix sort of 64-bit keys among them)
// and a host read; this is six launches (and the output's concatenation)
// and the same one host read (how many sources are new).
//
// Every key of node ++ src is inserted into an open-addressing table (linear
// probing, capacity a power of two >= 2 (K + D)) that keeps, per key, the
// smallest position it was inserted from (atomicMin): the key's first
// occurrence, whatever order the threads ran in. A source is new iff it is
// its key's first occurrence and comes after the K known keys; the new ones
// are numbered in source order by an exclusive scan, and each source's
// local id is its key's first position, or K + that number. Deterministic:
// the table's layout may differ run to run, what is read from it does not.
// Keys are any int64 but INT64_MIN, the table's empty mark: one is refused
// (its flag rides in the scan's last entry, read with the count).
#include <ATen/core/Tensor.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include <cstdint>
#include <limits>
#include <tuple>

#include <cub/device/device_scan.cuh>

#include "../../common/checks.h"
#include "../../common/cub_call.h"
#include "../../common/grid.h"

namespace fusesample {
namespace {

constexpr const char* kOp = "fusesample::dist_relabel";
constexpr int kThreads = 256;
constexpr long long kEmpty = std::numeric_limits<long long>::min();
constexpr long long kNone = std::numeric_limits<long long>::max();
// A key equal to kEmpty adds kRefused to the scan's last entry (above any
// count of sources, below overflow).
constexpr int64_t kRefused = int64_t{1} << 40;

__device__ __forceinline__ unsigned long long mix(unsigned long long k) {
  // splitmix64's finaliser: consecutive ids spread over the table
  k ^= k >> 30;
  k *= 0xbf58476d1ce4e5b9ULL;
  k ^= k >> 27;
  k *= 0x94d049bb133111ebULL;
  return k ^ (k >> 31);
}

__global__ void __launch_bounds__(kThreads)
init_table_kernel(long long* __restrict__ keys, long long* __restrict__ first, int64_t cap,
                  int64_t* __restrict__ refused) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < cap;
       i += static_cast<int64_t>(gridDim.x) * kThreads) {
    keys[i] = kEmpty;
    first[i] = kNone;
    if (i == 0) *refused = 0;
  }
}

// Inserts key i of node ++ src (K + D of them) and records its slot.
__global__ void __launch_bounds__(kThreads)
insert_kernel(const int64_t* __restrict__ node, int64_t K, const int64_t* __restrict__ src,
              int64_t D, long long* __restrict__ keys, long long* __restrict__ first,
              int64_t cap, int64_t* __restrict__ slot, int64_t* __restrict__ refused) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < K + D;
       i += static_cast<int64_t>(gridDim.x) * kThreads) {
    const long long k = static_cast<long long>(i < K ? node[i] : src[i - K]);
    if (k == kEmpty) {  // (not insertable: refused on the host)
      *refused = kRefused;
      slot[i] = -1;
      continue;
    }
    int64_t h = static_cast<int64_t>(mix(static_cast<unsigned long long>(k)) &
                                     static_cast<unsigned long long>(cap - 1));
    while (true) {  // (the table is at most half full: a free slot is near)
      const long long seen = atomicCAS(reinterpret_cast<unsigned long long*>(keys + h),
                                       static_cast<unsigned long long>(kEmpty),
                                       static_cast<unsigned long long>(k));
      if (seen == kEmpty || seen == k) break;
      h = (h + 1) & (cap - 1);
    }
    atomicMin(first + h, static_cast<long long>(i));
    slot[i] = h;
  }
}

// fresh[j] = 1 where source j is its key's first occurrence and not a known
// key; fresh[D] = the refusal flag, fresh[D + 1] = 0, so that the exclusive
// scan's entry D is the count of new sources and D + 1 that plus the flag.
__global__ void __launch_bounds__(kThreads)
mark_kernel(const long long* __restrict__ first, const int64_t* __restrict__ slot, int64_t K,
            int64_t D, const int64_t* __restrict__ refused, int64_t* __restrict__ fresh) {
  for (int64_t j = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; j <= D + 1;
       j += static_cast<int64_t>(gridDim.x) * kThreads) {
    if (j < D) {
      const int64_t h = slot[K + j];
      fresh[j] = h >= 0 && first[h] == K + j ? 1 : 0;
    } else {
      fresh[j] = j == D ? *refused : 0;
    }
  }
}

// local[j]: the key's first position among the known keys, or K + its
// number among the new ones; the new sources written in source order.
__global__ void __launch_bounds__(kThreads)
assign_kernel(const long long* __restrict__ first, const int64_t* __restrict__ slot,
              const int64_t* __restrict__ number, const int64_t* __restrict__ src, int64_t K,
              int64_t D, int64_t* __restrict__ local, int64_t* __restrict__ added) {
  for (int64_t j = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; j < D;
       j += static_cast<int64_t>(gridDim.x) * kThreads) {
    const int64_t h = slot[K + j];
    if (h < 0) {  // (a refused key: the call raises)
      local[j] = -1;
      continue;
    }
    const int64_t f = static_cast<int64_t>(first[h]);
    local[j] = f < K ? f : K + number[f - K];
    if (f == K + j) added[number[j]] = src[j];
  }
}

std::tuple<at::Tensor, at::Tensor, int64_t> dist_relabel_cuda(const at::Tensor& node,
                                                              const at::Tensor& src) {
  check_node_ids(kOp, "node", node, node, "node");
  check_node_ids(kOp, "src", src, node, "node");
  c10::cuda::CUDAGuard guard(node.device());
  const auto node_c = node.contiguous(), src_c = src.contiguous();
  const int64_t K = node_c.numel(), D = src_c.numel();
  TORCH_CHECK(D + 2 < std::numeric_limits<int32_t>::max() && K + D < kRefused, kOp,
              ": the CUDA kernel takes fewer than 2^31 - 3 sources, got ", D);
  const auto opts = node.options();
  auto local = at::empty({D}, opts);
  if (D == 0) return {node_c.clone(), local, 0};
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  int64_t cap = 64;
  while (cap < 2 * (K + D)) cap <<= 1;
  auto table = at::empty({2 * cap + 1}, opts);  // keys, first positions, the flag
  auto* keys = reinterpret_cast<long long*>(table.data_ptr<int64_t>());
  long long* first = keys + cap;
  int64_t* refused = table.data_ptr<int64_t>() + 2 * cap;
  auto slot = at::empty({K + D}, opts);
  auto fresh = at::empty({2, D + 2}, opts);  // the marks, their exclusive scan
  int64_t* mark = fresh.data_ptr<int64_t>();
  int64_t* number = mark + (D + 2);
  auto added = at::empty({D}, opts);
  init_table_kernel<<<grid_blocks(cap, kThreads, 8), kThreads, 0, stream>>>(keys, first, cap,
                                                                           refused);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  insert_kernel<<<grid_blocks(K + D, kThreads, 8), kThreads, 0, stream>>>(
      node_c.data_ptr<int64_t>(), K, src_c.data_ptr<int64_t>(), D, keys, first, cap,
      slot.data_ptr<int64_t>(), refused);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  mark_kernel<<<grid_blocks(D + 2, kThreads, 8), kThreads, 0, stream>>>(
      first, slot.data_ptr<int64_t>(), K, D, refused, mark);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  cub_call(opts, [&](void* temp, size_t& bytes) {
    return cub::DeviceScan::ExclusiveSum(temp, bytes, mark, number, static_cast<int>(D + 2),
                                         stream);
  });
  assign_kernel<<<grid_blocks(D, kThreads, 8), kThreads, 0, stream>>>(
      first, slot.data_ptr<int64_t>(), number, src_c.data_ptr<int64_t>(), K, D,
      local.data_ptr<int64_t>(), added.data_ptr<int64_t>());
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  // (the one host read: the count of new sources, plus kRefused if a key
  // was INT64_MIN)
  const int64_t read = fresh[1][D + 1].item<int64_t>();
  TORCH_CHECK(read < kRefused, kOp, ": a key equals INT64_MIN, which the CUDA kernel's "
              "table reserves (node keys are >= 0)");
  return {at::cat({node_c, added.narrow(0, 0, read)}), local, read};
}

}  // namespace

TORCH_LIBRARY_IMPL(fusesample, CUDA, m) {
  m.impl("dist_relabel", &dist_relabel_cuda);
}

}  // namespace fusesample
