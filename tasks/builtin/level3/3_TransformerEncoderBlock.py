import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """A pre-norm transformer encoder block: self-attention and an MLP, each with a residual."""

    def __init__(self, embed_dim, num_heads, mlp_ratio):
        super().__init__()
        self.num_heads = num_heads
        self.norm1 = nn.LayerNorm(embed_dim)
        self.qkv = nn.Linear(embed_dim, 3 * embed_dim)
        self.proj = nn.Linear(embed_dim, embed_dim)
        self.norm2 = nn.LayerNorm(embed_dim)
        hidden = mlp_ratio * embed_dim
        self.mlp = nn.Sequential(nn.Linear(embed_dim, hidden), nn.GELU(), nn.Linear(hidden, embed_dim))

    def forward(self, x):
        batch, seq, dim = x.shape
        q, k, v = self.qkv(self.norm1(x)).chunk(3, dim=-1)
        head_dim = dim // self.num_heads
        q, k, v = (t.reshape(batch, seq, self.num_heads, head_dim).transpose(1, 2) for t in (q, k, v))
        attention = F.scaled_dot_product_attention(q, k, v)
        x = x + self.proj(attention.transpose(1, 2).reshape(batch, seq, dim))
        return x + self.mlp(self.norm2(x))


batch_size = 32
seq_len = 512
embed_dim = 768
num_heads = 12
mlp_ratio = 4


def get_inputs():
    return [torch.rand(batch_size, seq_len, embed_dim)]


def get_init_inputs():
    return [embed_dim, num_heads, mlp_ratio]
