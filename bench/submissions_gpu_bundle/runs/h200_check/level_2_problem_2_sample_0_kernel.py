# cuDNN convolution through F.conv2d, then ReLU and the per-channel bias in one CUDA kernel.
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.cpp_extension import load_inline

CUDA_SOURCE = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>

__global__ void relu_add_channel_bias(float* __restrict__ y, const float* __restrict__ bias,
                                      int64_t n, int64_t plane, int64_t channels) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) {
        int64_t c = (i / plane) % channels;
        y[i] = fmaxf(y[i], 0.0f) + bias[c];
    }
}

torch::Tensor relu_add_channel_bias_(torch::Tensor y, torch::Tensor bias) {
    TORCH_CHECK(y.is_cuda() && y.is_contiguous() && y.dim() == 4, "bad input");
    auto b = bias.contiguous();
    int64_t n = y.numel();
    int64_t plane = y.size(2) * y.size(3);
    int threads = 256;
    int64_t blocks = (n + threads - 1) / threads;
    relu_add_channel_bias<<<blocks, threads, 0, c10::cuda::getCurrentCUDAStream()>>>(
        y.data_ptr<float>(), b.data_ptr<float>(), n, plane, y.size(1));
    return y;
}
"""

CPP_SOURCE = "torch::Tensor relu_add_channel_bias_(torch::Tensor y, torch::Tensor bias);"

extension = load_inline(
    name="kb_h200_check_level_2_problem_2",
    cpp_sources=CPP_SOURCE,
    cuda_sources=CUDA_SOURCE,
    functions=["relu_add_channel_bias_"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, bias_shape):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        y = F.conv2d(x, self.conv.weight, self.conv.bias).contiguous()
        return extension.relu_add_channel_bias_(y, self.bias)
