// CUDA kernel of fusesample::in_set_entries (contract: ../in_set_entries.cpp).
// A warp per position: its lanes take 32 consecutive entries of the list at
// a time (coalesced reads of nbr) and binary-search each in the position's
// set, the few keys of one run. A first launch counts the hits, an inclusive
// scan gives every position its offset (one host read: the total), and a
// second launch writes the hits in slot order (a ballot ranks them within
// the warp). On the current stream.
#include <ATen/core/Tensor.h>
#include <ATen/Dispatch.h>
#include <ATen/ops/empty.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include <tuple>

#include "../../common/grid.h"
#include "../in_set_entries_checks.h"

namespace fusesample {
namespace {

constexpr int kThreads = 256;
constexpr int kWarp = 32;

struct Sets {
  const int64_t *ptr, *node, *group, *key, *set_ptr;
  const bool* skip;
  int64_t num_nodes, num_lists, num_sets;
};

// Position of q in key[lo, hi) (sorted, unique), or -1.
__device__ __forceinline__ int64_t find(const int64_t* __restrict__ key, int64_t lo,
                                        int64_t hi, int64_t q) {
  int64_t n = hi - lo;
  while (n > 0) {
    const int64_t half = n >> 1;
    const bool right = key[lo + half] < q;
    lo = right ? lo + half + 1 : lo;
    n = right ? n - half - 1 : half;
  }
  return lo < hi && key[lo] == q ? lo : -1;
}

// kWrite false: count[i] = position i's hits. true: the hits written from
// end[i] - count[i] on (end: the inclusive scan of count).
template <typename nbr_t, bool kWrite>
__global__ void in_set_entries_kernel(Sets s, const nbr_t* __restrict__ nbr, int64_t n,
                                      int64_t* __restrict__ count,
                                      const int64_t* __restrict__ end,
                                      int64_t* __restrict__ nbr_pos,
                                      int64_t* __restrict__ pos, int64_t* __restrict__ slot) {
  const int lane = threadIdx.x % kWarp;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * (blockDim.x / kWarp);
  for (int64_t i = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / kWarp;
       i < n; i += warps) {
    // Every value below is the same across the warp, so are its branches.
    const int64_t v = s.node[i], g = s.group[i];
    const bool valid = !s.skip[i] && v >= 0 && v < s.num_lists && g >= 0 && g < s.num_sets;
    int64_t hits = 0;
    if (valid) {
      const int64_t lo = s.set_ptr[g], hi = s.set_ptr[g + 1], base = g * s.num_nodes;
      int64_t out = kWrite ? end[i] - count[i] : 0;
      for (int64_t first = s.ptr[v], last = s.ptr[v + 1]; first < last; first += kWarp) {
        const int64_t e = first + lane;
        const int64_t f = e < last ? find(s.key, lo, hi, base + static_cast<int64_t>(nbr[e])) : -1;
        const unsigned hit = __ballot_sync(0xffffffffu, f >= 0);
        if (kWrite && f >= 0) {
          const int64_t w = out + __popc(hit & ((1u << lane) - 1u));
          nbr_pos[w] = f;
          pos[w] = i;
          slot[w] = e;
        }
        out += __popc(hit);
        hits += __popc(hit);
      }
    }
    if (!kWrite && lane == 0) count[i] = hits;
  }
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> in_set_entries_cuda(
    const at::Tensor& ptr, const at::Tensor& nbr, const at::Tensor& node,
    const at::Tensor& group, const at::Tensor& key, const at::Tensor& set_ptr,
    const at::Tensor& skip, int64_t num_nodes) {
  check_in_set_entries(ptr, nbr, node, group, key, set_ptr, skip, num_nodes);
  c10::cuda::CUDAGuard guard(node.device());
  const auto ptr_c = ptr.contiguous(), nbr_c = nbr.contiguous(),
             node_c = node.contiguous(), group_c = group.contiguous(),
             key_c = key.contiguous(), set_c = set_ptr.contiguous(),
             skip_c = skip.contiguous();
  const int64_t n = node.numel();
  const auto options = node.options();
  if (n == 0) {
    const auto none = at::empty({0}, options);
    return {none, none.clone(), none.clone()};
  }
  const Sets s{ptr_c.data_ptr<int64_t>(), node_c.data_ptr<int64_t>(),
               group_c.data_ptr<int64_t>(), key_c.data_ptr<int64_t>(),
               set_c.data_ptr<int64_t>(), skip_c.data_ptr<bool>(),
               num_nodes, ptr.numel() - 1, set_ptr.numel() - 1};
  const auto stream = at::cuda::getCurrentCUDAStream();
  const int64_t blocks = grid_blocks(n * kWarp, kThreads, 8);
  auto count = at::empty({n}, options);
  std::tuple<at::Tensor, at::Tensor, at::Tensor> out;
  AT_DISPATCH_INDEX_TYPES(nbr.scalar_type(), "in_set_entries_cuda", [&] {
    const index_t* nb = nbr_c.data_ptr<index_t>();
    in_set_entries_kernel<index_t, false><<<blocks, kThreads, 0, stream>>>(
        s, nb, n, count.data_ptr<int64_t>(), nullptr, nullptr, nullptr, nullptr);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    const auto end = count.cumsum(0);
    const int64_t m = end[n - 1].item<int64_t>();  // the documented host read
    auto nbr_pos = at::empty({m}, options), pos = at::empty({m}, options),
         slot = at::empty({m}, options);
    if (m > 0) {
      in_set_entries_kernel<index_t, true><<<blocks, kThreads, 0, stream>>>(
          s, nb, n, count.data_ptr<int64_t>(), end.data_ptr<int64_t>(),
          nbr_pos.data_ptr<int64_t>(), pos.data_ptr<int64_t>(), slot.data_ptr<int64_t>());
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
    out = {nbr_pos, pos, slot};
  });
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(fusesample, CUDA, m) {
  m.impl("in_set_entries", &in_set_entries_cuda);
}

}  // namespace fusesample
