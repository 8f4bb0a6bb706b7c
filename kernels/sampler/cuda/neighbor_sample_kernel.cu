// CUDA kernel of fusesample::neighbor_sample (contract: ../neighbor_sample.cpp;
// phases: sample_phases.cuh). Output is bitwise equal to the CPU kernel's.
//
// Two launch modes over the same device phases:
//  * fused (default when every fan-out is >= 0): buffers sized from the
//    fan-out upper bound, every hop in ONE cooperative launch, ONE host
//    synchronisation per batch (to read the sizes and the error flag);
//  * per-hop (fused=false, or any fan-out -1): one launch per phase and one
//    host synchronisation per hop, so buffers are sized exactly and grow as
//    needed -- the conventional design, kept for the ablation and for
//    unbounded (-1) hops.
// Memory comes from PyTorch's caching allocator, work runs on the current
// stream, every launch is checked.
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include <algorithm>
#include <limits>
#include <vector>

#include "../../common/checks.h"
#include "sample_kernels.cuh"

namespace fusesample {
namespace {

using namespace cuda_sampler;
constexpr const char* kOp = "fusesample::neighbor_sample";

int64_t sat_mul(int64_t a, int64_t b) {
  if (a == 0 || b == 0) return 0;
  return a > std::numeric_limits<int64_t>::max() / b
             ? std::numeric_limits<int64_t>::max() : a * b;
}

int64_t tiles(int64_t n) { return std::max<int64_t>(1, (n + kTile - 1) / kTile); }

// Grows `t` to at least `need` entries, keeping its first `keep`.
void grow(at::Tensor& t, int64_t need, int64_t keep) {
  if (t.numel() >= need) return;
  auto bigger = at::empty({std::max(need, 2 * t.numel())}, t.options());
  if (keep > 0) bigger.narrow(0, 0, keep).copy_(t.narrow(0, 0, keep));
  t = bigger;
}

struct Table {
  at::Tensor key, first, value;
  HashTable view() const {
    return HashTable{reinterpret_cast<unsigned long long*>(key.data_ptr<int64_t>()),
                     reinterpret_cast<long long*>(first.data_ptr<int64_t>()),
                     reinterpret_cast<long long*>(value.data_ptr<int64_t>()),
                     static_cast<uint64_t>(key.numel() - 1)};
  }
};

// Open-addressing table of at least 2 * entries slots (load <= 1/2), in one
// allocation initialised by two memsets: keys to all-ones (kEmptyKey), and
// first/value to 0x7f7f... -- a large positive "infinity" for atomicMin.
Table make_table(int64_t entries, const at::TensorOptions& opts,
                 cudaStream_t stream) {
  int64_t cap = 1024;
  while (cap < 2 * entries) cap <<= 1;
  auto all = at::empty({3 * cap}, opts);
  int64_t* p = all.data_ptr<int64_t>();
  C10_CUDA_CHECK(cudaMemsetAsync(p, 0xff, cap * sizeof(int64_t), stream));
  C10_CUDA_CHECK(cudaMemsetAsync(p + cap, 0x7f, 2 * cap * sizeof(int64_t), stream));
  return Table{all.narrow(0, 0, cap), all.narrow(0, cap, cap),
               all.narrow(0, 2 * cap, cap)};
}

struct State {
  at::Tensor node, batch, out_row, out_col, out_edge, pos, nbr, offsets, flags,
      partials, meta;
  Buffers view(int num_hops) {
    return Buffers{node.data_ptr<int64_t>(),
                   batch.defined() ? batch.data_ptr<int64_t>() : nullptr,
                   out_row.data_ptr<int64_t>(), out_col.data_ptr<int64_t>(),
                   out_edge.data_ptr<int64_t>(), pos.data_ptr<int64_t>(),
                   nbr.data_ptr<int64_t>(), offsets.data_ptr<int64_t>(),
                   flags.data_ptr<int64_t>(), partials.data_ptr<int64_t>(),
                   reinterpret_cast<unsigned long long*>(
                       meta.data_ptr<int64_t>() + 3 + 2 * num_hops)};
  }
};

template <typename index_t>
std::vector<at::Tensor> sample(const at::Tensor& colptr, const at::Tensor& row,
                               const c10::optional<at::Tensor>& edge_id,
                               const at::Tensor& seed,
                               const std::vector<int64_t>& fanouts,
                               bool replace, bool disjoint, uint64_t rng_seed,
                               bool fused, int64_t* error) {
  const auto opts = colptr.options();
  const int64_t num_nodes = colptr.numel() - 1;
  const int64_t num_seeds = seed.numel();
  const int num_hops = static_cast<int>(fanouts.size());
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();

  const Graph<index_t> g{colptr.data_ptr<int64_t>(), row.data_ptr<index_t>(),
                         edge_id.has_value() ? edge_id->data_ptr<int64_t>() : nullptr,
                         num_nodes};
  const Params p{num_seeds, rng_seed, replace, disjoint};
  Fanouts f{};
  f.num = num_hops;
  for (int h = 0; h < num_hops; ++h) f.k[h] = fanouts[h];

  // Upper bounds from the fan-outs (unbounded if any hop takes all).
  const int64_t key_space = disjoint ? sat_mul(num_seeds, num_nodes) : num_nodes;
  const bool bounded = std::all_of(fanouts.begin(), fanouts.end(),
                                   [](int64_t k) { return k >= 0; });
  int64_t frontier = num_seeds, node_cap = num_seeds, edge_cap = 0,
          hop_edge_cap = 0, frontier_cap = num_seeds;
  for (int64_t k : fanouts) {
    const int64_t e = k >= 0 ? sat_mul(frontier, k) : 0;
    edge_cap += e;
    hop_edge_cap = std::max(hop_edge_cap, e);
    frontier = std::min(e, key_space);
    frontier_cap = std::max(frontier_cap, frontier);
    node_cap += frontier;
  }
  node_cap = std::min(node_cap, key_space + num_seeds);

  // Outputs are separate tensors (they outlive the call); the scratch is
  // carved out of one allocation.
  State s;
  s.node = at::empty({std::max<int64_t>(node_cap, 1)}, opts);
  if (disjoint) s.batch = at::empty({std::max<int64_t>(node_cap, 1)}, opts);
  s.out_row = at::empty({std::max<int64_t>(edge_cap, 1)}, opts);
  s.out_col = at::empty_like(s.out_row);
  s.out_edge = at::empty_like(s.out_row);
  {
    const int64_t sizes[] = {hop_edge_cap + 1, hop_edge_cap + 1, hop_edge_cap + 1,
                             frontier_cap + 1,
                             tiles(std::max(frontier_cap, hop_edge_cap)),
                             4 + 2 * num_hops};
    int64_t total = 0;
    for (int64_t n : sizes) total += n;
    auto scratch = at::empty({total}, opts);
    at::Tensor* views[] = {&s.pos, &s.nbr, &s.flags, &s.offsets, &s.partials,
                           &s.meta};
    int64_t at_ = 0;
    for (int i = 0; i < 6; ++i) {
      *views[i] = scratch.narrow(0, at_, sizes[i]);
      at_ += sizes[i];
    }
    C10_CUDA_CHECK(cudaMemsetAsync(s.meta.data_ptr<int64_t>(), 0,
                                   s.meta.numel() * sizeof(int64_t), stream));
  }
  Table table = make_table(std::min(node_cap, key_space), opts, stream);

  int blocks = 0;
  C10_CUDA_CHECK(persistent_blocks<index_t>(colptr.get_device(), &blocks));
  const Launch l{blocks, stream};

  if (fused && !bounded)
    TORCH_WARN_ONCE(kOp, ": a fan-out of -1 has no upper bound, so the "
                    "per-hop path (one host sync per hop) samples instead of "
                    "the fused single launch");
  if (fused && bounded) {
    C10_CUDA_CHECK(launch_fused<index_t>(l, g, p, seed.data_ptr<int64_t>(),
                                         s.view(num_hops), table.view(), f,
                                         s.meta.data_ptr<int64_t>()));
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  } else {
    auto hop = at::empty({static_cast<int64_t>(sizeof(Hop) / sizeof(int64_t))}, opts);
    Hop* dh = reinterpret_cast<Hop*>(hop.data_ptr<int64_t>());
    seeds_kernel<index_t><<<blocks, kThreads, 0, stream>>>(
        g, p, seed.data_ptr<int64_t>(), s.view(num_hops), table.view(), dh,
        s.meta.data_ptr<int64_t>());
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    Hop host{0, 0, 0, num_seeds, 0, 0};
    for (int h = 0; h < num_hops; ++h) {
      // The frontier is at most the last hop's edges: size before counting.
      const int64_t frontier_max = host.end - host.begin;
      grow(s.offsets, frontier_max + 1, 0);
      grow(s.partials, tiles(frontier_max), 0);
      set_hop_kernel<<<1, 1, 0, stream>>>(dh, h, fanouts[h]);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
      Buffers b = s.view(num_hops);
      count_kernel<index_t><<<blocks, kThreads, 0, stream>>>(g, p, b, dh);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
      offsets_apply_kernel<<<blocks, kThreads, 0, stream>>>(b, dh);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
      set_edges_kernel<<<1, 1, 0, stream>>>(b, dh, h, fanouts[h]);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
      // The one synchronisation of this hop: its exact size.
      C10_CUDA_CHECK(cudaMemcpyAsync(&host, dh, sizeof(Hop),
                                     cudaMemcpyDeviceToHost, stream));
      C10_CUDA_CHECK(cudaStreamSynchronize(stream));
      grow(s.pos, host.edges + 1, 0);
      grow(s.nbr, host.edges + 1, 0);
      grow(s.flags, host.edges + 1, 0);
      grow(s.partials, tiles(host.edges), 0);
      grow(s.out_row, host.base + host.edges, host.base);
      grow(s.out_col, host.base + host.edges, host.base);
      grow(s.out_edge, host.base + host.edges, host.base);
      grow(s.node, host.end + host.edges, host.end);
      if (disjoint) grow(s.batch, host.end + host.edges, host.end);
      b = s.view(num_hops);
      if (2 * (host.end + host.edges) > table.key.numel()) {
        table = make_table(host.end + host.edges, opts, stream);
        rehash_kernel<index_t><<<blocks, kThreads, 0, stream>>>(
            g, p, b, table.view(), host.end);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
      }
      const HashTable t = table.view();
      sample_kernel<index_t><<<blocks, kThreads, 0, stream>>>(g, p, b, t, dh);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
      flag_kernel<index_t><<<blocks, kThreads, 0, stream>>>(g, p, b, t, dh);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
      assign_kernel<index_t><<<blocks, kThreads, 0, stream>>>(g, p, b, t, dh);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
      relabel_kernel<index_t><<<blocks, kThreads, 0, stream>>>(g, p, b, t, dh);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
      advance_kernel<<<1, 1, 0, stream>>>(b, dh, s.meta.data_ptr<int64_t>(),
                                          num_hops);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
      // Next hop's frontier is at most this hop's new nodes <= its edges.
      host.begin = host.end;
      host.end += host.edges;
      host.base += host.edges;
    }
    if (num_hops == 0) {
      // meta[0] (node count) is written by advance_kernel otherwise.
      s.meta.narrow(0, 0, 1).fill_(num_seeds);
    }
  }

  // The one synchronisation of the batch: sizes, per-hop counts, errors,
  // through one copy into pinned memory.
  auto meta = at::empty({s.meta.numel()},
                        at::TensorOptions().dtype(at::kLong).pinned_memory(true));
  C10_CUDA_CHECK(cudaMemcpyAsync(meta.data_ptr<int64_t>(), s.meta.data_ptr<int64_t>(),
                                 s.meta.numel() * sizeof(int64_t),
                                 cudaMemcpyDeviceToHost, stream));
  C10_CUDA_CHECK(cudaStreamSynchronize(stream));
  const int64_t* m = meta.data_ptr<int64_t>();
  *error = m[3 + 2 * num_hops];
  if (*error != kOk) return {};
  const int64_t n = m[0], e = m[1];
  auto nsn = meta.narrow(0, 2, num_hops + 1).clone();
  auto nse = meta.narrow(0, 3 + num_hops, num_hops).clone();
  return {s.node.narrow(0, 0, n),
          s.out_row.narrow(0, 0, e),
          s.out_col.narrow(0, 0, e),
          s.out_edge.narrow(0, 0, e),
          disjoint ? s.batch.narrow(0, 0, n) : at::empty({0}, opts),
          nsn, nse};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor,
           at::Tensor, at::Tensor>
neighbor_sample_cuda(const at::Tensor& colptr, const at::Tensor& row,
                     const c10::optional<at::Tensor>& edge_id,
                     const at::Tensor& seed, at::IntArrayRef num_neighbors,
                     bool replace, bool disjoint, int64_t rng_seed,
                     bool fused) {
  check_csc(kOp, colptr, row, edge_id);
  check_node_ids(kOp, "seed", seed, colptr);
  check_fanouts(kOp, num_neighbors);
  TORCH_CHECK(static_cast<int>(num_neighbors.size()) <= kMaxHops, kOp,
              ": at most ", kMaxHops, " hops are supported, got ",
              num_neighbors.size());
  c10::cuda::CUDAGuard guard(colptr.device());
  const auto colptr_c = colptr.contiguous();
  const auto row_c = row.contiguous();
  const auto seed_c = seed.contiguous();
  c10::optional<at::Tensor> eid_c;
  if (edge_id.has_value()) eid_c = edge_id->contiguous();
  const std::vector<int64_t> fanouts(num_neighbors.begin(), num_neighbors.end());
  if (seed.numel() == 0) {
    auto empty = at::empty({0}, colptr.options());
    auto cpu = at::TensorOptions().dtype(at::kLong);
    return std::make_tuple(empty, empty.clone(), empty.clone(), empty.clone(),
                           empty.clone(), at::zeros({(int64_t)fanouts.size() + 1}, cpu),
                           at::zeros({(int64_t)fanouts.size()}, cpu));
  }
  // Errors found on the device come back as a code and are raised here,
  // outside the dispatch lambda and after every buffer is released.
  int64_t error = kOk;
  auto out = AT_DISPATCH_INDEX_TYPES(row.scalar_type(), "neighbor_sample_cuda", [&] {
    return sample<index_t>(colptr_c, row_c, eid_c, seed_c, fanouts, replace,
                           disjoint, static_cast<uint64_t>(rng_seed), fused,
                           &error);
  });
  TORCH_CHECK(error == kOk, kOp, ": 'seed' holds ids outside [0, ",
              colptr.numel() - 1, ")");
  return std::make_tuple(out[0], out[1], out[2], out[3], out[4], out[5], out[6]);
}

}  // namespace

TORCH_LIBRARY_IMPL(fusesample, CUDA, m) {
  m.impl("neighbor_sample", &neighbor_sample_cuda);
}

}  // namespace fusesample
