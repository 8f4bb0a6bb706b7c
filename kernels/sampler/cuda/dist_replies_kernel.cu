// CUDA kernels of fusesample::dist_pad_replies and dist_unpad_replies
// (contracts: ../dist_hop.cpp; the composites there are the reference and
// the CPU implementation). A hop of the distributed sampler pads its replies
// to the fan-out so that they need no exchange of sizes; as composites the
// padding and its undoing were ~13 and ~16 small launches a hop, host time
// on a loader whose batches are host-bound. Here: a scan and one fill to pad,
// a scatter, a scan and one fill to unpad.
//
// Inputs the host cannot check without reading the device (counts above K
// or not summing to the draws, perm not a permutation, total not the
// counts' sum) give wrong rows, never a read or a write outside a tensor:
// every index is bounded before it is used.
#include <ATen/core/Tensor.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include <cstdint>
#include <tuple>

#include <cub/device/device_scan.cuh>

#include "../../common/checks.h"
#include "../../common/cub_call.h"
#include "../../common/grid.h"
#include "../dist_replies_checks.h"

namespace fusesample {
namespace {

constexpr int kThreads = 256;

// (the exclusive scan of n int64 counts into first[0..n])
void exclusive_scan(const at::Tensor& like, const int64_t* counts, int64_t* first, int64_t n,
                    cudaStream_t stream) {
  TORCH_CHECK(n < (int64_t{1} << 31), "fusesample: the replies' scan takes fewer than 2^31 "
              "entries, got ", n);
  cub_call(like.options(), [&](void* temp, size_t& bytes) {
    return cub::DeviceScan::ExclusiveSum(temp, bytes, counts, first, static_cast<int>(n),
                                         stream);
  });
}

// reply[r][c] for every (request r, column c): the count, then the
// request's draws (sources at 1 .. K, edge ids at K + 1 .. 2K) or -1. A
// thread per entry of the row-major reply: the writes are coalesced.
__global__ void __launch_bounds__(kThreads)
pad_kernel(const int64_t* __restrict__ count, const int64_t* __restrict__ first,
           const int64_t* __restrict__ row, const int64_t* __restrict__ edge, int64_t R,
           int64_t D, int64_t K, int64_t* __restrict__ reply) {
  const int64_t width = 1 + 2 * K;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < R * width;
       i += static_cast<int64_t>(gridDim.x) * kThreads) {
    const int64_t r = i / width, c = i - r * width;
    if (c == 0) {
      reply[i] = count[r];
      continue;
    }
    const bool is_row = c <= K;
    const int64_t j = is_row ? c - 1 : c - 1 - K;  // (the draw's rank)
    const int64_t at = first[r] + j;
    reply[i] = j < count[r] && at >= 0 && at < D ? (is_row ? row : edge)[at] : -1;
  }
}

at::Tensor dist_pad_replies_cuda(const at::Tensor& count, const at::Tensor& row,
                                 const at::Tensor& edge, int64_t K) {
  check_pad_replies("fusesample::dist_pad_replies", count, row, edge, K);
  c10::cuda::CUDAGuard guard(count.device());
  const auto count_c = count.contiguous(), row_c = row.contiguous(), edge_c = edge.contiguous();
  const int64_t R = count_c.numel(), D = row_c.numel(), width = 1 + 2 * K;
  auto reply = at::empty({R, width}, count.options());
  if (R == 0) return reply;
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  auto first = at::empty({R}, count.options());
  exclusive_scan(count_c, count_c.data_ptr<int64_t>(), first.data_ptr<int64_t>(), R, stream);
  pad_kernel<<<grid_blocks(R * width, kThreads, 8), kThreads, 0, stream>>>(
      count_c.data_ptr<int64_t>(), first.data_ptr<int64_t>(), row_c.data_ptr<int64_t>(),
      edge_c.data_ptr<int64_t>(), R, D, K, reply.data_ptr<int64_t>());
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return reply;
}

// count[perm[i]] = got[i][0]: the draws of each frontier node, in frontier
// order (an index outside [0, F): skipped; count was zeroed).
__global__ void __launch_bounds__(kThreads)
frontier_counts_kernel(const int64_t* __restrict__ got, const int64_t* __restrict__ perm,
                       int64_t F, int64_t width, int64_t K, int64_t* __restrict__ count) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < F;
       i += static_cast<int64_t>(gridDim.x) * kThreads) {
    const int64_t t = perm[i];
    const int64_t c = got[i * width];
    if (t >= 0 && t < F) count[t] = c < 0 ? 0 : (c > K ? K : c);
  }
}

// Draw j of the reply got[i] (a thread per (reply, slot)) to its place in
// frontier order: its target's first draw (first[perm[i]]) plus j.
__global__ void __launch_bounds__(kThreads)
unpad_kernel(const int64_t* __restrict__ got, const int64_t* __restrict__ perm,
             const int64_t* __restrict__ first, int64_t F, int64_t K, int64_t begin,
             int64_t total, int64_t* __restrict__ src, int64_t* __restrict__ edge,
             int64_t* __restrict__ col) {
  const int64_t width = 1 + 2 * K;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < F * K;
       i += static_cast<int64_t>(gridDim.x) * kThreads) {
    const int64_t r = i / K, j = i - r * K;
    const int64_t t = perm[r];
    if (t < 0 || t >= F || j >= got[r * width]) continue;
    const int64_t at = first[t] + j;
    if (at < 0 || at >= total) continue;
    src[at] = got[r * width + 1 + j];
    edge[at] = got[r * width + 1 + K + j];
    col[at] = t + begin;
  }
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> dist_unpad_replies_cuda(const at::Tensor& got,
                                                                       const at::Tensor& perm,
                                                                       int64_t begin,
                                                                       int64_t K,
                                                                       int64_t total) {
  check_unpad_replies("fusesample::dist_unpad_replies", got, perm, K, total);
  c10::cuda::CUDAGuard guard(got.device());
  const auto got_c = got.contiguous(), perm_c = perm.contiguous();
  const int64_t F = got_c.size(0), width = 1 + 2 * K;
  const auto opts = got.options();
  auto src = at::empty({total}, opts), edge = at::empty({total}, opts),
       col = at::empty({total}, opts);
  if (total == 0) return {src, edge, col};
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  auto count = at::zeros({F}, opts);  // (a perm entry out of range leaves a 0)
  auto first = at::empty({F}, opts);
  frontier_counts_kernel<<<grid_blocks(F, kThreads, 8), kThreads, 0, stream>>>(
      got_c.data_ptr<int64_t>(), perm_c.data_ptr<int64_t>(), F, width, K,
      count.data_ptr<int64_t>());
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  exclusive_scan(count, count.data_ptr<int64_t>(), first.data_ptr<int64_t>(), F, stream);
  unpad_kernel<<<grid_blocks(F * K, kThreads, 8), kThreads, 0, stream>>>(
      got_c.data_ptr<int64_t>(), perm_c.data_ptr<int64_t>(), first.data_ptr<int64_t>(), F, K,
      begin, total, src.data_ptr<int64_t>(), edge.data_ptr<int64_t>(),
      col.data_ptr<int64_t>());
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return {src, edge, col};
}

}  // namespace

TORCH_LIBRARY_IMPL(fusesample, CUDA, m) {
  m.impl("dist_pad_replies", &dist_pad_replies_cuda);
  m.impl("dist_unpad_replies", &dist_unpad_replies_cuda);
}

}  // namespace fusesample
