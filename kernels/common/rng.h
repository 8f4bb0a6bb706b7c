// Counter-based random numbers shared by the CPU and CUDA kernels.
//
// Every random draw is a pure function of (seed, a, b, c) -- for the samplers
// (batch seed, hop, target position, slot). There is no generator state to
// carry between threads, so a draw does not depend on how work is split over
// threads or blocks: the CPU and CUDA kernels produce bitwise identical
// samples for the same inputs, and a run is repeatable given its seed.
#pragma once

#include <cstdint>

#if defined(__CUDACC__) || defined(__HIPCC__)
#define FS_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define FS_HOST_DEVICE inline
#endif

namespace fusesample {

// SplitMix64's finaliser: a bijection on 64-bit words with full avalanche.
FS_HOST_DEVICE uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// 64 random bits keyed by (seed, a, b, c). Each word is mixed before the next
// is folded in, so keys that differ in any one field give unrelated outputs.
FS_HOST_DEVICE uint64_t random_bits(uint64_t seed, uint64_t a, uint64_t b,
                                    uint64_t c) {
  uint64_t h = mix64(seed + 0x9e3779b97f4a7c15ULL);
  h = mix64(h ^ (a + 0x632be59bd9b4e019ULL));
  h = mix64(h ^ (b + 0x8cb92ba72f3d8dd7ULL));
  return mix64(h ^ (c + 0xd6e8feb86659fd93ULL));
}

// Maps 64 random bits to [0, n) by a multiply-high (Lemire). The bias is at
// most n / 2^64, far below anything a statistical test can see.
FS_HOST_DEVICE uint64_t uniform_below(uint64_t bits, uint64_t n) {
#if defined(__CUDA_ARCH__)
  return __umul64hi(bits, n);
#else
  return static_cast<uint64_t>((static_cast<unsigned __int128>(bits) * n) >> 64);
#endif
}

// Draw s of the target keyed (a, b): a uniform integer in [0, n). Every draw
// of every sampler goes through it (with replacement: n = the degree; in
// Floyd's algorithm: n = j + 1), on both devices.
FS_HOST_DEVICE int64_t keyed_draw(uint64_t seed, int64_t a, int64_t b, int64_t s,
                                  int64_t n) {
  return static_cast<int64_t>(uniform_below(
      random_bits(seed, static_cast<uint64_t>(a), static_cast<uint64_t>(b),
                  static_cast<uint64_t>(s)),
      static_cast<uint64_t>(n)));
}

}  // namespace fusesample
