// Floating point that rounds the same on the CPU and the GPU.
//
// The samplers' draws must be bitwise equal on both devices, so arithmetic
// whose result decides a draw uses these: every operation rounded on its own
// (FS_ADD/FS_SUB/FS_MUL/FS_DIV; nvcc would otherwise fuse a * b + c into one
// FMA, rounded once), and a logarithm built from them (det_neg_log) instead
// of the two devices' different libm implementations.
#pragma once

#include <cstdint>
#include <cstring>

#include "rng.h"

#if defined(__CUDA_ARCH__)
#define FS_ADD(a, b) __dadd_rn((a), (b))
#define FS_SUB(a, b) __dsub_rn((a), (b))
#define FS_MUL(a, b) __dmul_rn((a), (b))
#define FS_DIV(a, b) __ddiv_rn((a), (b))
#define FS_CLZ64(x) __clzll(static_cast<long long>(x))
#else
#define FS_ADD(a, b) ((a) + (b))
#define FS_SUB(a, b) ((a) - (b))
#define FS_MUL(a, b) ((a) * (b))
#define FS_DIV(a, b) ((a) / (b))
#define FS_CLZ64(x) __builtin_clzll(x)
#endif

namespace fusesample {

// 2^-e for 0 <= e < 1023, exactly.
FS_HOST_DEVICE double fs_pow2_neg(int e) {
  const uint64_t bits = static_cast<uint64_t>(1023 - e) << 52;
  double x;
  memcpy(&x, &bits, sizeof(x));
  return x;
}

// -log(u) for u = m * 2^-53, m in [1, 2^53]: log(m) by a power-of-two split
// and the atanh series of the mantissa, with separately rounded operations
// only. Accurate to a few ulp; what matters is that it is the same function
// on both devices.
FS_HOST_DEVICE double det_neg_log(uint64_t m) {
  const int e = 63 - FS_CLZ64(m);  // m = 2^e * f
  // f in [1, 2): m times 2^-e, exact (a power of two built from its bits)
  double f = static_cast<double>(m) * fs_pow2_neg(e);
  int ex = e;
  if (f > 1.4142135623730951) {  // keep f in [sqrt(1/2), sqrt(2)]
    f = f * 0.5;  // exact
    ++ex;
  }
  const double s = FS_DIV(FS_SUB(f, 1.0), FS_ADD(f, 1.0));  // |s| <= 0.172
  const double s2 = FS_MUL(s, s);
  double sum = 1.0 / 23.0, term;
  for (int n = 21; n >= 1; n -= 2) {  // Horner over 1/n, n odd
    term = FS_MUL(sum, s2);
    sum = FS_ADD(term, 1.0 / static_cast<double>(n));
  }
  const double log_f = FS_MUL(FS_MUL(2.0, s), sum);
  const double ln2 = 0.6931471805599453;
  // log u = (ex - 53) ln 2 + log f: no cancellation near u = 1 (ex = 53)
  return -FS_ADD(FS_MUL(static_cast<double>(ex - 53), ln2), log_f);
}

}  // namespace fusesample
