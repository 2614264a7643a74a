"""The four models of issue 36's trial (shared by the backend's tests, its
benchmark and its example): an MLP with ReLU and cross-entropy, the same
with LayerNorm and GELU, a tiny transformer block, and a bag of embeddings
through every gather and scatter PyTorch users write."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class MLP(nn.Module):
    def __init__(self, layer_norm=False, d_in=784, d_hidden=256, d_out=10):
        super().__init__()
        self.l1 = nn.Linear(d_in, d_hidden)
        self.l2 = nn.Linear(d_hidden, d_out)
        self.ln = nn.LayerNorm(d_hidden) if layer_norm else None

    def forward(self, x, y):
        h = self.l1(x)
        h = F.gelu(self.ln(h)) if self.ln is not None else F.relu(h)
        return F.cross_entropy(self.l2(h), y)


class Block(nn.Module):
    """Embedding, causal single-head attention, LayerNorm, MLP, cross-entropy."""

    def __init__(self, vocab=50, d=32, t=16, dropout=0.0):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.randn(t, d) * 0.1)
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        self.head = nn.Linear(d, vocab)
        self.drop = nn.Dropout(dropout)
        self.register_buffer("mask", torch.tril(torch.ones(t, t, dtype=torch.bool)))

    def forward(self, idx, y):
        t = idx.shape[1]
        x = self.emb(idx) + self.pos[:t]
        h = self.ln1(x)
        q, k, v = self.q(h), self.k(h), self.v(h)
        att = (q @ k.transpose(-2, -1)) / (q.shape[-1] ** 0.5)
        att = att.masked_fill(~self.mask[:t, :t], float("-inf"))
        att = self.drop(F.softmax(att, dim=-1))
        x = x + self.o(att @ v)
        x = x + self.mlp(self.ln2(x))
        logits = self.head(x)
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), y.view(-1))


class Bag(nn.Module):
    """W[idx], index_select, gather, index_add, index_put, scatter_add."""

    def __init__(self, vocab=100, d=16):
        super().__init__()
        self.W = nn.Parameter(torch.randn(vocab, d) * 0.1)
        self.E = nn.Embedding(vocab, d)
        self.out = nn.Linear(d, 5)

    def forward(self, idx, off, y):
        a = self.W[idx]
        b = torch.index_select(self.E.weight, 0, idx.view(-1)).view(idx.shape + (-1,))
        h = (a + b).sum(1)
        g = torch.gather(h, 1, off)
        z = torch.zeros(h.shape[0], 16).index_add(0, torch.arange(h.shape[0]), h)
        z = z.index_put((torch.arange(h.shape[0]), torch.zeros(h.shape[0], dtype=torch.long)), g[:, 0])
        z = z.scatter_add(1, off, g)
        return F.cross_entropy(self.out(z), y)


MODELS = {"mlp": lambda: MLP(), "mlp_ln_gelu": lambda: MLP(layer_norm=True), "block": lambda: Block(),
          "bag": lambda: Bag()}


def batch(name, step, batch_size=32):
    g = torch.Generator().manual_seed(1000 + step)
    if name.startswith("mlp"):
        return (torch.randn(batch_size, 784, generator=g), torch.randint(0, 10, (batch_size,), generator=g))
    if name == "block":
        return (torch.randint(0, 50, (4, 16), generator=g), torch.randint(0, 50, (4, 16), generator=g))
    return (torch.randint(0, 100, (8, 6), generator=g), torch.randint(0, 16, (8, 3), generator=g),
            torch.randint(0, 5, (8,), generator=g))
