# GEMM through F.linear, then divide, clamp and the residual add in one CUDA kernel.
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.cpp_extension import load_inline

CUDA_SOURCE = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>

__global__ void divide_clamp_residual(const float* __restrict__ y, const float* __restrict__ x,
                                      float* __restrict__ out, int64_t n, float divisor) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) out[i] = fminf(fmaxf(y[i] / divisor, -1.0f), 1.0f) + x[i];
}

torch::Tensor divide_clamp_residual_forward(torch::Tensor y, torch::Tensor x, double divisor) {
    TORCH_CHECK(y.is_cuda() && y.sizes() == x.sizes(), "bad input");
    auto yc = y.contiguous();
    auto xc = x.contiguous();
    auto out = torch::empty_like(yc);
    int64_t n = yc.numel();
    int threads = 256;
    int64_t blocks = (n + threads - 1) / threads;
    divide_clamp_residual<<<blocks, threads, 0, c10::cuda::getCurrentCUDAStream()>>>(
        yc.data_ptr<float>(), xc.data_ptr<float>(), out.data_ptr<float>(), n, (float)divisor);
    return out;
}
"""

CPP_SOURCE = "torch::Tensor divide_clamp_residual_forward(torch::Tensor y, torch::Tensor x, double divisor);"

extension = load_inline(
    name="kb_h200_check_level_2_problem_8",
    cpp_sources=CPP_SOURCE,
    cuda_sources=CUDA_SOURCE,
    functions=["divide_clamp_residual_forward"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, features, divisor):
        super().__init__()
        self.linear = nn.Linear(features, features)
        self.divisor = divisor

    def forward(self, x):
        y = F.linear(x, self.linear.weight, self.linear.bias)
        return extension.divide_clamp_residual_forward(y, x, self.divisor)
