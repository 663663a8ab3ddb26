# ReLU as a CUDA kernel (load_inline).
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_SOURCE = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>

__global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ out, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) out[i] = fmaxf(x[i], 0.0f);
}

torch::Tensor relu_forward(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "expects a float32 CUDA tensor");
    auto input = x.contiguous();
    auto out = torch::empty_like(input);
    int64_t n = input.numel();
    int threads = 256;
    int64_t blocks = (n + threads - 1) / threads;
    relu_kernel<<<blocks, threads, 0, c10::cuda::getCurrentCUDAStream()>>>(
        input.data_ptr<float>(), out.data_ptr<float>(), n);
    return out;
}
"""

CPP_SOURCE = "torch::Tensor relu_forward(torch::Tensor x);"

extension = load_inline(
    name="kb_h200_check_level_1_problem_9",
    cpp_sources=CPP_SOURCE,
    cuda_sources=CUDA_SOURCE,
    functions=["relu_forward"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return extension.relu_forward(x)
