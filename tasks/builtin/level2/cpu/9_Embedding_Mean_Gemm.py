import torch
import torch.nn as nn


class Model(nn.Module):
    """Embedding lookup of integer token ids (kept int64), mean over the sequence, linear."""

    def __init__(self, num_embeddings, embedding_dim, out_features):
        super().__init__()
        self.embedding = nn.Embedding(num_embeddings, embedding_dim)
        self.linear = nn.Linear(embedding_dim, out_features)

    def forward(self, tokens):
        return self.linear(self.embedding(tokens).mean(dim=1))


batch_size = 16
seq_len = 32
num_embeddings = 512
embedding_dim = 64
out_features = 32


def get_inputs():
    return [torch.randint(0, num_embeddings, (batch_size, seq_len))]


def get_init_inputs():
    return [num_embeddings, embedding_dim, out_features]
