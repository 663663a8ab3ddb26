# LayerNorm over the last dimension in Triton: one program per row, the module's own weight and bias.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def layer_norm_rows(x_ptr, w_ptr, b_ptr, out_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    base = row.to(tl.int64) * n_cols
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + base + cols, mask=mask, other=0.0)
    mean = tl.sum(x, 0) / n_cols
    centred = tl.where(mask, x - mean, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(centred * centred, 0) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0)
    tl.store(out_ptr + base + cols, centred * rstd * w + b, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.norm = nn.LayerNorm(features)

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n_cols = x.shape[-1]
        rows = x.numel() // n_cols
        block = triton.next_power_of_2(n_cols)
        layer_norm_rows[(rows,)](x, self.norm.weight, self.norm.bias, out, n_cols, self.norm.eps, BLOCK=block)
        return out
