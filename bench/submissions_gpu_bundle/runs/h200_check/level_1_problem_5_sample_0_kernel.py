# Sum over dimension 1 (keepdim) of a 2-D tensor in Triton: one program per row, chunked.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_sums(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    base = row.to(tl.int64) * n_cols
    total = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        total += tl.load(x_ptr + base + cols, mask=cols < n_cols, other=0.0)
    tl.store(out_ptr + row, tl.sum(total, 0))


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        if x.dim() != 2 or self.dim != 1:
            raise ValueError("this kernel sums dimension 1 of a 2-D tensor")
        x = x.contiguous()
        out = torch.empty((x.shape[0], 1), dtype=x.dtype, device=x.device)
        row_sums[(x.shape[0],)](x, out, x.shape[1], BLOCK=1024)
        return out
