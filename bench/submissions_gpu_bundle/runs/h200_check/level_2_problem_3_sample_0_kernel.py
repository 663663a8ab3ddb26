# GEMM through F.linear, then sigmoid and the row sum in one CUDA kernel (a block per row).
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.cpp_extension import load_inline

CUDA_SOURCE = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>

__global__ void sigmoid_row_sum(const float* __restrict__ y, float* __restrict__ out, int64_t cols) {
    __shared__ float partial[256];
    const float* row = y + blockIdx.x * cols;
    float total = 0.0f;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) total += 1.0f / (1.0f + expf(-row[j]));
    partial[threadIdx.x] = total;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = partial[0];
}

torch::Tensor sigmoid_row_sum_forward(torch::Tensor y) {
    TORCH_CHECK(y.is_cuda() && y.is_contiguous() && y.dim() == 2, "bad input");
    auto out = torch::empty({y.size(0), 1}, y.options());
    sigmoid_row_sum<<<y.size(0), 256, 0, c10::cuda::getCurrentCUDAStream()>>>(
        y.data_ptr<float>(), out.data_ptr<float>(), y.size(1));
    return out;
}
"""

CPP_SOURCE = "torch::Tensor sigmoid_row_sum_forward(torch::Tensor y);"

extension = load_inline(
    name="kb_h200_check_level_2_problem_3",
    cpp_sources=CPP_SOURCE,
    cuda_sources=CUDA_SOURCE,
    functions=["sigmoid_row_sum_forward"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.linear = nn.Linear(input_size, hidden_size)

    def forward(self, x):
        y = F.linear(x, self.linear.weight, self.linear.bias).contiguous()
        return extension.sigmoid_row_sum_forward(y)
