// Kernels and host-side drivers of the CUDA neighbour sampler. Plain CUDA
// (raw pointers, an explicit stream), so it compiles and can be checked
// without ATen; neighbor_sample_kernel.cu owns allocation and registration
// and is the only translation unit that includes this header.
#pragma once

#include <cuda_runtime.h>

#include <cstdlib>

#include "sample_phases.cuh"

namespace fusesample {
namespace cuda_sampler {

struct Fanouts {
  int64_t k[kMaxHops];
  int num;
};

// Device-side record of the sampling: sizes of every hop, so the host reads
// everything it needs with one copy at the end.
//   meta[0] = nodes, meta[1] = edges, meta[2 .. 2+L] = num_sampled_nodes,
//   meta[3+L .. 3+2L) = num_sampled_edges
__device__ inline void record(int64_t* meta, int num_hops, const Hop& h,
                              int64_t hop, int64_t new_nodes) {
  meta[2 + hop + 1] = new_nodes;
  meta[3 + num_hops + hop] = h.edges;
}

// ------------------------------------------------------------- fused --
// Every phase of every hop in one cooperative launch.
template <typename index_t>
__global__ void __launch_bounds__(kThreads)
fused_sample_kernel(Graph<index_t> g, Params p, const int64_t* seed,
                    Buffers b0, HashTable t, Fanouts f, int64_t* meta) {
  namespace cg = cooperative_groups;
  cg::grid_group grid = cg::this_grid();
  const bool leader = blockIdx.x == 0 && threadIdx.x == 0;

  phase_seeds(g, p, seed, b0, t);
  if (leader) meta[2] = p.num_seeds;
  grid.sync();

  Hop h{0, 0, 0, p.num_seeds, 0, 0};
  Hop prev{};
  Buffers prev_b = b0;
  for (int hop = 0; hop < f.num; ++hop) {
    h.index = hop;
    h.k = f.k[hop];
    Buffers b = b0;
    b.out_row += h.base;
    b.out_col += h.base;
    b.out_edge += h.base;
    const int64_t frontier = h.end - h.begin;

    // The previous hop's relabel only reads what is final; it overlaps
    // this hop's count.
    if (hop > 0) phase_relabel(g, p, prev, prev_b, t);
    phase_count_reduce(g, p, h, b);
    grid.sync();
    phase_offsets_apply(h, b);
    grid.sync();
    h.edges = b.offsets[frontier];

    phase_fill(g, p, h, b, t);
    phase_floyd(g, p, h, b, t);
    grid.sync();
    phase_flag_reduce(g, p, h, b, t);
    grid.sync();
    phase_flag_apply_assign(g, p, h, b, t);
    grid.sync();

    const int64_t new_nodes = b.flags[h.edges];
    if (leader) record(meta, f.num, h, hop, new_nodes);
    prev = h;
    prev_b = b;
    h.begin = h.end;
    h.end += new_nodes;
    h.base += h.edges;
  }
  if (f.num > 0) phase_relabel(g, p, prev, prev_b, t);
  if (leader) {
    meta[0] = h.end;
    meta[1] = h.base;
  }
}

// ----------------------------------------------------------- per-hop --
// The same phases, one kernel each; sizes live in device memory (`Hop* dh`)
// so no launch needs the host to know them.
template <typename index_t>
__global__ void seeds_kernel(Graph<index_t> g, Params p, const int64_t* seed,
                             Buffers b, HashTable t, Hop* dh, int64_t* meta) {
  phase_seeds(g, p, seed, b, t);
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    *dh = Hop{0, 0, 0, p.num_seeds, 0, 0};
    meta[2] = p.num_seeds;
  }
}

__device__ inline Buffers hop_view(Buffers b, const Hop& h) {
  b.out_row += h.base;
  b.out_col += h.base;
  b.out_edge += h.base;
  return b;
}

template <typename index_t>
__global__ void count_kernel(Graph<index_t> g, Params p, Buffers b,
                             const Hop* dh) {
  const Hop h = *dh;
  phase_count_reduce(g, p, h, hop_view(b, h));
}


__global__ void offsets_apply_kernel(Buffers b, Hop* dh) {
  const Hop h = *dh;
  phase_offsets_apply(h, b);
}

// After the offsets scan: the hop's slot count.
__global__ void set_edges_kernel(Buffers b, Hop* dh, int hop,
                                        int64_t k) {
  dh->index = hop;
  dh->k = k;
  dh->edges = b.offsets[dh->end - dh->begin];
}

__global__ void set_hop_kernel(Hop* dh, int hop, int64_t k) {
  dh->index = hop;
  dh->k = k;
}

template <typename index_t>
__global__ void sample_kernel(Graph<index_t> g, Params p, Buffers b,
                              HashTable t, const Hop* dh) {
  const Hop h = *dh;
  const Buffers v = hop_view(b, h);
  phase_fill(g, p, h, v, t);
  phase_floyd(g, p, h, v, t);
}

template <typename index_t>
__global__ void flag_kernel(Graph<index_t> g, Params p, Buffers b, HashTable t,
                            const Hop* dh) {
  const Hop h = *dh;
  phase_flag_reduce(g, p, h, hop_view(b, h), t);
}


template <typename index_t>
__global__ void assign_kernel(Graph<index_t> g, Params p, Buffers b,
                              HashTable t, const Hop* dh) {
  const Hop h = *dh;
  phase_flag_apply_assign(g, p, h, hop_view(b, h), t);
}

template <typename index_t>
__global__ void relabel_kernel(Graph<index_t> g, Params p, Buffers b,
                               HashTable t, const Hop* dh) {
  const Hop h = *dh;
  phase_relabel(g, p, h, hop_view(b, h), t);
}

// Closes a hop: records it and moves the frontier.
__global__ void advance_kernel(Buffers b, Hop* dh, int64_t* meta,
                                      int num_hops) {
  Hop h = *dh;
  const int64_t new_nodes = b.flags[h.edges];
  record(meta, num_hops, h, h.index, new_nodes);
  h.begin = h.end;
  h.end += new_nodes;
  h.base += h.edges;
  *dh = h;
  meta[0] = h.end;
  meta[1] = h.base;
}

// Re-inserts node[0, n) after the table grew (per-hop path with k = -1):
// every key is "old" (first = -1) and keeps its local id.
template <typename index_t>
__global__ void rehash_kernel(Graph<index_t> g, Params p, Buffers b,
                              HashTable t, int64_t n) {
  GridRange r;
  for (int64_t i = r.start; i < n; i += r.stride) {
    const int64_t bt = b.batch ? b.batch[i] : 0;
    const uint64_t s = table_insert(t, node_key(p, g.num_nodes, bt, b.node[i]));
    atomicMin(&t.first[s], -1LL);
    atomicMin(&t.value[s], static_cast<long long>(i));
  }
}

// ------------------------------------------------------------ drivers --
struct Launch {
  int blocks;
  cudaStream_t stream;
};

// Largest grid that is co-resident (required by the cooperative launch and
// a good persistent grid for the per-hop kernels too). Queried once per
// (device, index type): the occupancy API is not free on a hot path.
template <typename index_t>
inline cudaError_t query_persistent_blocks(int device, int* blocks) {
  int sms = 0, per_sm = 0;
  cudaError_t err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  if (err != cudaSuccess) return err;
  err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(
      &per_sm, fused_sample_kernel<index_t>, kThreads, 0);
  if (err != cudaSuccess) return err;
  per_sm = per_sm > 0 ? per_sm : 1;
  // Fewer resident blocks make each grid.sync() cheaper; more hide more
  // memory latency. FUSESAMPLE_BLOCKS_PER_SM overrides for tuning.
  if (const char* env = getenv("FUSESAMPLE_BLOCKS_PER_SM")) {
    const int want = atoi(env);
    if (want > 0 && want < per_sm) per_sm = want;
  }
  *blocks = sms * per_sm;
  return cudaSuccess;
}

template <typename index_t>
inline cudaError_t persistent_blocks(int device, int* blocks) {
  constexpr int kMaxDevices = 64;
  static int cached[kMaxDevices] = {};
  if (device < 0 || device >= kMaxDevices)
    return query_persistent_blocks<index_t>(device, blocks);
  if (cached[device] == 0) {
    const cudaError_t err = query_persistent_blocks<index_t>(device, &cached[device]);
    if (err != cudaSuccess) return err;
  }
  *blocks = cached[device];
  return cudaSuccess;
}

template <typename index_t>
inline cudaError_t launch_fused(const Launch& l, Graph<index_t> g, Params p,
                                const int64_t* seed, Buffers b, HashTable t,
                                Fanouts f, int64_t* meta) {
  void* args[] = {&g, &p, &seed, &b, &t, &f, &meta};
  return cudaLaunchCooperativeKernel(
      reinterpret_cast<void*>(fused_sample_kernel<index_t>), dim3(l.blocks),
      dim3(kThreads), args, 0, l.stream);
}

}  // namespace cuda_sampler
}  // namespace fusesample
