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

// num hops of fan-outs, hop-major in device memory: hop h's fan-out for
// edge type t is k[h * num_types + t].
struct Fanouts {
  const int64_t* k;
  int num;
};

// ------------------------------------------------------------- fused --
// Every phase of every hop in one cooperative launch: 1 + 2 * hops grid
// barriers, sizes read from `totals` after each.
template <typename index_t>
__global__ void __launch_bounds__(kThreads)
fused_sample_kernel(Graph<index_t> g, Params p, const int64_t* seed,
                    Buffers b, HashTable t, Fanouts f) {
  namespace cg = cooperative_groups;
  cg::grid_group grid = cg::this_grid();

  phase_seeds(g, p, seed, b, t, f.k);
  grid.sync();
  if (f.num == 0) {
    phase_type_counts(b);
    return;
  }

  Hop h{0, f.k, 0, p.num_seeds, 0, b.totals[1]};
  Hop prev{-1, nullptr, 0, 0, 0, 0};
  for (int hop = 0; hop < f.num; ++hop) {
    if (!hop_fits(b, h.base, h.edges)) return;  // the host reports it
    phase_sample(g, p, h, prev, b, t);
    grid.sync();
    const bool has_next = hop + 1 < f.num;
    const int64_t* next_k = has_next ? f.k + (hop + 1) * g.num_types : nullptr;
    phase_dedup(g, p, h, b, t, has_next, next_k);
    grid.sync();
    // A dedup that outgrew the buffers stopped writing: stop the batch.
    if (*reinterpret_cast<volatile unsigned long long*>(b.error) == kOverCapacity)
      return;
    prev = h;
    h = next_hop(h, next_k, b.totals[0], b.totals[1]);
    int64_t* swap = b.offsets;  // this hop's offsets serve the hop after next
    b.offsets = b.next_offsets;
    b.next_offsets = swap;
  }
  phase_relabel(g, p, prev, b, t);
  phase_type_counts(b);  // reads what the last dedup made final
}

// ----------------------------------------------------------- per-hop --
// The same phases, a kernel each. The host knows every hop's size (it reads
// `totals` after each dedup), so the hops come by value.
template <typename index_t>
__global__ void __launch_bounds__(kThreads)
seeds_kernel(Graph<index_t> g, Params p, const int64_t* seed, Buffers b,
             HashTable t, const int64_t* k0) {
  phase_seeds(g, p, seed, b, t, k0);
}

template <typename index_t>
__global__ void __launch_bounds__(kThreads)
sample_kernel(Graph<index_t> g, Params p, Buffers b, HashTable t, Hop h,
              Hop prev) {
  phase_sample(g, p, h, prev, b, t);
}

template <typename index_t>
__global__ void __launch_bounds__(kThreads)
dedup_kernel(Graph<index_t> g, Params p, Buffers b, HashTable t, Hop h,
             bool has_next, const int64_t* next_k) {
  phase_dedup(g, p, h, b, t, has_next, next_k);
}

template <typename index_t>
__global__ void __launch_bounds__(kThreads)
relabel_kernel(Graph<index_t> g, Params p, Buffers b, HashTable t, Hop h) {
  phase_relabel(g, p, h, b, t);
}

__global__ void __launch_bounds__(kThreads) type_counts_kernel(Buffers b) {
  phase_type_counts(b);
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
                                Fanouts f) {
  void* args[] = {&g, &p, &seed, &b, &t, &f};
  return cudaLaunchCooperativeKernel(
      reinterpret_cast<void*>(fused_sample_kernel<index_t>), dim3(l.blocks),
      dim3(kThreads), args, 0, l.stream);
}

}  // namespace cuda_sampler
}  // namespace fusesample
