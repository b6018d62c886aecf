"""The yardstick for `npm run bench:engine`: the engine's GPT trained and sampled in PyTorch eager.

bench/engine.ts runs this when Python has torch (`pip install torch`, from the machines' local
index; never a dependency of `npm start`) and prints the ratios. The model is the engine's
(gpu-worker/engine/model.ts): pre-LayerNorm blocks, GELU (tanh) MLP ×4, biases, learned positions,
a head tied to the token embedding; AdamW; the same batch shapes, trained positions per step
(batch × (context − 1)) and thread count. One JSON object per line on stdout, nothing else.

usage: python3 bench/torch_reference.py '{"vocab": 105, "threads": 2, ...}' (bench/engine.ts writes it)
"""

import json
import math
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn


class Block(nn.Module):
    def __init__(self, d: int, heads: int):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc = nn.Linear(d, 4 * d)
        self.out = nn.Linear(4 * d, d)

    def forward(self, x, cache=None):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        if cache is not None:
            if "k" in cache:
                k = torch.cat([cache["k"], k], dim=2)
                v = torch.cat([cache["v"], v], dim=2)
            cache["k"], cache["v"] = k, v
        # Causal while there is more than one query; a decoding step's one query sees every key.
        y = F.scaled_dot_product_attention(q, k, v, is_causal=t > 1)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, vocab: int, layers: int, width: int, heads: int, context: int):
        super().__init__()
        self.wte = nn.Embedding(vocab, width)
        self.wpe = nn.Embedding(context, width)
        self.blocks = nn.ModuleList(Block(width, heads) for _ in range(layers))
        self.ln = nn.LayerNorm(width)

    def forward(self, idx, caches=None, offset=0):
        pos = torch.arange(offset, offset + idx.shape[1])
        x = self.wte(idx) + self.wpe(pos)
        for i, block in enumerate(self.blocks):
            x = block(x, None if caches is None else caches[i])
        return self.ln(x) @ self.wte.weight.T


def train_tokens_per_s(vocab: int, cfg: dict, steps: int) -> float:
    torch.manual_seed(0)
    model = GPT(vocab, cfg["layers"], cfg["width"], cfg["heads"], cfg["contextLength"])
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    data = torch.randint(0, vocab, (cfg["batch"], cfg["contextLength"]))
    inputs, targets = data[:, :-1], data[:, 1:]

    def step():
        logits = model(inputs)
        loss = F.cross_entropy(logits.reshape(-1, vocab), targets.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss.item()

    for _ in range(2):
        step()
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    times.sort()
    return cfg["batch"] * (cfg["contextLength"] - 1) / times[len(times) // 2]


@torch.inference_mode()
def sample_tokens_per_s(vocab: int, cfg: dict, prompts: int, prompt_len: int, new_tokens: int) -> float:
    torch.manual_seed(0)
    model = GPT(vocab, cfg["layers"], cfg["width"], cfg["heads"], cfg["contextLength"]).eval()
    idx = torch.randint(0, vocab, (prompts, prompt_len))

    def run():
        caches = [{} for _ in model.blocks]
        logits = model(idx, caches)[:, -1]
        for i in range(new_tokens):
            token = torch.multinomial(F.softmax(logits, dim=-1), 1)
            if i == new_tokens - 1:
                break
            logits = model(token, caches, offset=prompt_len + i)[:, -1]

    run()
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        run()
        times.append(time.perf_counter() - t0)
    times.sort()
    return prompts * new_tokens / times[1]


def matmul_gflops(m: int, k: int, n: int, runs: int = 15) -> float:
    a, b = torch.randn(m, k), torch.randn(k, n)
    for _ in range(3):
        a @ b
    best = math.inf
    for _ in range(runs):
        t0 = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - t0)
    return 2 * m * k * n / best / 1e9


def emit(name: str, value: float, unit: str, **details):
    print(json.dumps({"name": name, "value": float(f"{value:.4g}"), "unit": unit, **details}), flush=True)


def main():
    spec = json.loads(sys.argv[1])
    torch.set_num_threads(spec["threads"])
    details = {"torch": torch.__version__, "threads": spec["threads"]}
    emit("torch_matmul_gflops", max(matmul_gflops(*s) for s in spec["matmulShapes"]), "GFLOP/s", **details)
    emit("torch_gemm_1024_gflops", matmul_gflops(1024, 1024, 1024, 8), "GFLOP/s", **details)
    emit("torch_train_tokens_per_s_small", train_tokens_per_s(spec["vocab"], spec["small"], 8), "tokens/s", **details)
    emit("torch_train_tokens_per_s_large", train_tokens_per_s(spec["vocab"], spec["large"], 5), "tokens/s", **details)
    s = spec["sample"]
    emit("torch_sample_tokens_per_s", sample_tokens_per_s(spec["vocab"], s, s["prompts"], s["promptLength"], s["newTokens"]), "tokens/s", **details)


if __name__ == "__main__":
    main()
