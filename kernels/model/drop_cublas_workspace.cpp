// fusesample::drop_cublas_workspace() -- drops the current stream's cuBLAS
// workspaces from ATen's map (a no-op without CUDA). CapturedStep calls it
// around its capture so that the graph's GEMMs use a workspace in the
// graph's own memory pool (../common/capture_workspace.h says why).
#include <torch/library.h>

#ifdef WITH_CUDA
#include <ATen/cuda/CUDAContext.h>

#include "../common/capture_workspace.h"
#endif

namespace fusesample {
namespace {

void drop_current_cublas_workspace() {
#ifdef WITH_CUDA
  drop_cublas_workspace(at::cuda::getCurrentCUDAStream().stream());
#endif
}

}  // namespace
}  // namespace fusesample

TORCH_LIBRARY_FRAGMENT(fusesample, m) {
  m.def("drop_cublas_workspace() -> ()", &fusesample::drop_current_cublas_workspace);
}
