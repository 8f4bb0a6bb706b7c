// The headers that nearly every C++ translation unit of the extension
// includes, compiled once per build into a GCC precompiled header (setup.py,
// docs/building.md) and put in front of each .cpp file with `-include`:
// torch/library.h and ATen's tensor headers were 3-4 s of every file's
// compile, more than the code of most files. Each file still includes what
// it uses itself, so the build is the same without the precompiled header
// (FUSESAMPLE_PCH=0, a compiler other than GCC, nvcc's .cu files).
// The .hpp suffix is what makes GCC compile it as a header.

#include <ATen/core/Tensor.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <ATen/TensorOperators.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/zeros.h>
#include <ATen/ops/zeros_like.h>
#include <torch/library.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>
