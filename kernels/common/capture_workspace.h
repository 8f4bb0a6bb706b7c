// cuBLAS workspaces and CUDA graph captures.
//
// ATen gives every (cuBLAS handle, stream) pair a workspace (32 MB on
// Hopper), made by the first GEMM on that stream and held by a process-wide
// map that other code clears: torch.compile's CUDA graphs
// (mode='reduce-overhead') clear all of it around each recording, and a
// destroyed CUDAGraph clears its capture stream's entry. A graph whose GEMMs
// were captured with a workspace made outside the capture (by the warm-up
// on the capture stream that the usual recipe runs) keeps writing into it
// after it went back to the allocator -- and torch.cuda.graph's
// empty_cache() unmaps freed memory: other tensors get corrupted, or a
// replay dies with "unspecified launch failure".
//
// So a capture runs inside a CaptureOwnsCublasWorkspace: it drops the
// stream's entry first, so that the capture's first GEMM makes a workspace
// in the graph's private pool (which lives as long as the graph), and drops
// it again at the end, so that no work outside the graph runs in the
// graph's memory (the freed block can then only go to a later capture into
// the same pool, e.g. the backward of the same recording, which never runs
// at the same time as the forward).
#pragma once

#ifdef WITH_CUDA

#include <ATen/cuda/CUDAContext.h>

namespace fusesample {

// Drops `stream`'s cuBLAS (and cuBLASLt) workspaces from ATen's map; the
// next GEMM on it makes new ones. ATen without a per-stream call (torch
// 2.11; 2.13 has one) drops every stream's, as torch.compile's CUDA graphs
// do: a graph captured elsewhere with a workspace made outside its capture
// is then exposed as described above.
inline void drop_cublas_workspace(cudaStream_t stream) {
#ifdef FUSESAMPLE_CLEAR_CUBLAS_FOR_STREAM
  at::cuda::clearCublasWorkspacesForStream(stream);
#else
  (void)stream;
  at::cuda::clearCublasWorkspaces();
#endif
}

// Construct right before capture_begin on `stream`, destroy after
// capture_end.
class CaptureOwnsCublasWorkspace {
 public:
  explicit CaptureOwnsCublasWorkspace(cudaStream_t stream) : stream_(stream) {
    drop_cublas_workspace(stream_);
  }
  ~CaptureOwnsCublasWorkspace() { drop_cublas_workspace(stream_); }
  CaptureOwnsCublasWorkspace(const CaptureOwnsCublasWorkspace&) = delete;
  CaptureOwnsCublasWorkspace& operator=(const CaptureOwnsCublasWorkspace&) = delete;

 private:
  cudaStream_t stream_;
};

}  // namespace fusesample

#endif  // WITH_CUDA
