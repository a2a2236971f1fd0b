"""Seed 002's code (d2l's corr2d), shared by the benchmarks and the tests that time it.

``Y`` is created on ``X``'s device, so that the loop measures kernel launches and not
a copy back to the CPU per element (the seed's own version; see notebook 03).
"""

SEED_002 = '''
import torch

def corr2d(X, K):
    h, w = K.shape
    Y = torch.zeros((X.shape[0] - h + 1, X.shape[1] - w + 1), device=X.device)
    for i in range(Y.shape[0]):
        for j in range(Y.shape[1]):
            Y[i, j] = (X[i:i + h, j:j + w] * K).sum()
    return Y

def corr2d_multi_in(X, K):
    return sum(corr2d(x, k) for x, k in zip(X, K))

def corr2d_multi_in_out(X, K):
    return torch.stack([corr2d_multi_in(X, k) for k in K], 0)

def corr2d_multi_in_out_1x1(X, K):
    c_i, h, w = X.shape
    c_o = K.shape[0]
    X = X.reshape((c_i, h * w))
    K = K.reshape((c_o, c_i))
    return torch.matmul(K, X).reshape((c_o, h, w))
'''


def loop_and_matmul(device="cpu"):
    """Setup code and cells for the cost of an option on two extremes: one 256×256 product, and
    seed 002's loop of ~3,400 operator calls (``X`` and ``K`` stay on the CPU, as in the seed)."""
    setup = SEED_002 + f"X = torch.randn(24, 20)\nK = torch.randn(1, 1)\na = torch.randn(256, 256, device={device!r})\n"
    return setup, {"seed 002 corr2d loop": "corr2d(X, K)", "256x256 matmul": "a @ a"}
