# LayerNorm, exact GELU and a scale, fused in one Triton kernel (one program per row).
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def norm_gelu_scale(x_ptr, w_ptr, b_ptr, out_ptr, n_cols, eps, scale, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    base = row.to(tl.int64) * n_cols
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + base + cols, mask=mask, other=0.0)
    mean = tl.sum(x, 0) / n_cols
    centred = tl.where(mask, x - mean, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(centred * centred, 0) / n_cols + eps)
    y = centred * rstd * tl.load(w_ptr + cols, mask=mask, other=0.0) + tl.load(
        b_ptr + cols, mask=mask, other=0.0
    )
    y = 0.5 * y * (1.0 + tl.erf(y * 0.7071067811865476)) * scale
    tl.store(out_ptr + base + cols, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, features, scale):
        super().__init__()
        self.norm = nn.LayerNorm(features)
        self.scale = scale

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n_cols = x.shape[-1]
        block = triton.next_power_of_2(n_cols)
        norm_gelu_scale[(x.numel() // n_cols,)](
            x, self.norm.weight, self.norm.bias, out, n_cols, self.norm.eps, self.scale, BLOCK=block
        )
        return out
