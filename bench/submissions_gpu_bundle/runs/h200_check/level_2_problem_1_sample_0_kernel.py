# cuBLAS GEMM through F.linear, then multiply and LeakyReLU fused in one CUDA kernel.
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.cpp_extension import load_inline

CUDA_SOURCE = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>

__global__ void scale_leaky_relu(float* __restrict__ y, int64_t n, float multiplier, float slope) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) {
        float v = y[i] * multiplier;
        y[i] = v > 0.0f ? v : v * slope;
    }
}

torch::Tensor scale_leaky_relu_(torch::Tensor y, double multiplier, double slope) {
    TORCH_CHECK(y.is_cuda() && y.is_contiguous() && y.scalar_type() == torch::kFloat32, "bad input");
    int64_t n = y.numel();
    int threads = 256;
    int64_t blocks = (n + threads - 1) / threads;
    scale_leaky_relu<<<blocks, threads, 0, c10::cuda::getCurrentCUDAStream()>>>(
        y.data_ptr<float>(), n, (float)multiplier, (float)slope);
    return y;
}
"""

CPP_SOURCE = "torch::Tensor scale_leaky_relu_(torch::Tensor y, double multiplier, double slope);"

extension = load_inline(
    name="kb_h200_check_level_2_problem_1",
    cpp_sources=CPP_SOURCE,
    cuda_sources=CUDA_SOURCE,
    functions=["scale_leaky_relu_"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, multiplier, negative_slope):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.multiplier = multiplier
        self.leaky_relu = nn.LeakyReLU(negative_slope)

    def forward(self, x):
        y = F.linear(x, self.gemm.weight, self.gemm.bias).contiguous()
        return extension.scale_leaky_relu_(y, self.multiplier, self.leaky_relu.negative_slope)
