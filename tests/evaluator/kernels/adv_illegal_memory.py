"""Containment (GPU): a CUDA kernel that writes far out of bounds (illegal memory access)."""

import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>

__global__ void scribble(float* out, long n) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i + (1L << 40)] = 1.0f;
}

torch::Tensor scribble_cuda(torch::Tensor x) {
    auto out = torch::empty_like(x);
    long n = x.numel();
    scribble<<<(n + 255) / 256, 256>>>(out.data_ptr<float>(), n);
    return out;
}
"""

ext = load_inline(
    name="adv_illegal_memory_ext",
    cpp_sources="torch::Tensor scribble_cuda(torch::Tensor x);",
    cuda_sources=cuda_source,
    functions=["scribble_cuda"],
)


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.scribble_cuda(x.contiguous())
