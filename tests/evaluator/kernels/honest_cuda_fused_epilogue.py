"""Honest: cuBLAS for the linear layer, one fused CUDA kernel for divide, clamp and the residual add."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>

__global__ void divide_clamp_residual(const float* __restrict__ y, const float* __restrict__ x,
                                      float* __restrict__ out, float inv_divisor, long n) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    long stride = (long)gridDim.x * blockDim.x;
    for (; i < n; i += stride) {
        float v = y[i] * inv_divisor;
        v = fminf(fmaxf(v, -1.0f), 1.0f);
        out[i] = v + x[i];
    }
}

torch::Tensor epilogue_cuda(torch::Tensor y, torch::Tensor x, double divisor) {
    auto out = torch::empty_like(y);
    long n = y.numel();
    int threads = 256;
    int blocks = (int)std::min<long>((n + threads - 1) / threads, 132L * 32);
    divide_clamp_residual<<<blocks, threads>>>(y.data_ptr<float>(), x.data_ptr<float>(),
                                               out.data_ptr<float>(), (float)(1.0 / divisor), n);
    return out;
}
"""

ext = load_inline(
    name="fused_epilogue_ext",
    cpp_sources="torch::Tensor epilogue_cuda(torch::Tensor y, torch::Tensor x, double divisor);",
    cuda_sources=cuda_source,
    functions=["epilogue_cuda"],
)


class ModelNew(nn.Module):
    def __init__(self, features, divisor):
        super().__init__()
        self.linear = nn.Linear(features, features)
        self.divisor = divisor

    def forward(self, x):
        x = x.contiguous()
        y = torch.addmm(self.linear.bias, x, self.linear.weight.t())
        return ext.epilogue_cuda(y, x, self.divisor)
