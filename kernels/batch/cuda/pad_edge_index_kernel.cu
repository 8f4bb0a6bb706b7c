// CUDA kernel of fusesample::pad_edge_index (contract: ../pad_edge_index.cpp;
// the CPU kernel is the reference). A thread per padded slot; the counts
// travel by value in the launch (no host-to-device copy); a bad id becomes
// the pad edge and is reported in the error word (no sync).
#include <ATen/core/Tensor.h>
#include <ATen/Dispatch.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include "../../common/error_word.cuh"
#include "../../common/grid.h"
#include "../pad_edge_index_common.h"

namespace fusesample {
namespace {

constexpr const char* kOp = "fusesample::pad_edge_index";
constexpr int kThreads = 256;

template <typename index_t>
__global__ void __launch_bounds__(kThreads)
pad_edge_index_kernel(const PadHops k, const index_t* __restrict__ in, int64_t E,
                      index_t* __restrict__ out, int64_t D,
                      unsigned long long* __restrict__ error) {
  // (the counts indexed by hop from shared memory, not from a copy of the
  // parameter struct in every thread's local memory)
  __shared__ PadHops hops;
  if (threadIdx.x == 0) hops = k;
  __syncthreads();
  for (int64_t p = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; p < D;
       p += static_cast<int64_t>(gridDim.x) * kThreads) {
    const PadSlot s = pad_slot(hops, p, in, E);
    if (s.bad) report(error, kBadSource, s.bad_id);
    out[p] = static_cast<index_t>(s.src);
    out[D + p] = static_cast<index_t>(s.dst);
  }
}

void pad_edge_index_cuda(const at::Tensor& edge_index, at::IntArrayRef edges,
                         at::IntArrayRef padded_edges, at::IntArrayRef src_nodes,
                         at::IntArrayRef padded_src_nodes, at::IntArrayRef dst_nodes,
                         at::IntArrayRef padded_dst_nodes, const at::Tensor& out) {
  const PadHops k = check_pad_edge_index(kOp, edge_index, edges, padded_edges, src_nodes,
                                         padded_src_nodes, dst_nodes, padded_dst_nodes, out);
  c10::cuda::CUDAGuard guard(edge_index.device());
  const auto ei = edge_index.contiguous();
  const int64_t E = ei.size(1), D = out.size(1);
  if (D == 0) return;
  unsigned long long* error = error_word_ptr(edge_index.device());
  AT_DISPATCH_INDEX_TYPES(ei.scalar_type(), kOp, [&] {
    pad_edge_index_kernel<index_t><<<grid_blocks(D, kThreads, 8), kThreads, 0,
                                     at::cuda::getCurrentCUDAStream()>>>(
        k, ei.data_ptr<index_t>(), E, out.data_ptr<index_t>(), D, error);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
}

}  // namespace

TORCH_LIBRARY_IMPL(fusesample, CUDA, m) {
  m.impl("pad_edge_index", &pad_edge_index_cuda);
}

}  // namespace fusesample
