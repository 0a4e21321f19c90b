#!/usr/bin/env python3
"""PyTorch Python reference for `trafo bench` (docs/design.md "Benchmark reference").

The same model, batches, optimizer and figures as `trafo bench`, written as a competent PyTorch
user would: torch.nn.Transformer (batch_first, SDPA inside), embeddings × sqrt(d) plus sinusoidal
positions, tied output projection, torch.optim.Adam (defaults, betas/eps as trafo), torch.autocast
for bf16, torch.set_num_threads; on the CPU or, with --device cuda, on a CUDA device. Two greedy decoders: the tutorial's, which recomputes the whole
prefix every step, and one with a KV cache written by hand over nn.Transformer's own weights.

Batches and sentences follow the recipe in include/trafo/bench/synthetic.h (SplitMix64 from the
same seed), so both programs train and decode exactly the same shapes and token ids. Output: a
table, or with --json one JSON object per line with the records and keys of `trafo bench --json`.

    .venv/bin/python bench/pytorch_reference.py --config configs/toy.toml --threads 2 [--json]
"""
import argparse
import json
import math
import os
import statistics
import sys
import time
import tomllib
import warnings

import torch
import torch.nn.functional as F
from torch import nn

PAD, UNK, BOS, EOS = 0, 1, 2, 3
FIRST_ID = 4
POOL_PAIRS = 4096
MASK64 = (1 << 64) - 1
# Keys of a `trafo train` config file that the benchmark takes (the others are ignored).
FILE_KEYS = {"vocab-size", "d-model", "heads", "encoder-layers", "decoder-layers", "d-ff", "dropout",
             "activation", "norm", "tie-embeddings", "max-positions", "threads"}


# ---- synthetic batches: include/trafo/bench/synthetic.h ----

class SplitMix64:
    def __init__(self, seed):
        self.state = seed & MASK64

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        return z ^ (z >> 31)

    def uniform(self, n):
        return self.next() % n


def draw_source_pieces(rng):
    return 3 + rng.uniform(25) + rng.uniform(25)


def synthetic_batches(count, batch_tokens, vocab, seed):
    """Returns [(src [B,S], tgt_in [B,T], tgt_out [B,T], [(S, T) real lengths])]."""
    rng = SplitMix64(seed)
    pool = []
    for _ in range(POOL_PAIRS):
        s = draw_source_pieces(rng)
        t = max(1, s + rng.uniform(9) - 4)
        pool.append((s + 1, t + 1))
    order = sorted(range(len(pool)), key=lambda i: max(pool[i]))  # stable: ties by index
    packed, current, width = [], [], 0
    for i in order:
        w = max(width, max(pool[i]))
        if current and w * (len(current) + 1) > batch_tokens:
            packed.append(current)
            current, width = [], 0
        current.append(pool[i])
        width = max(width, max(pool[i]))
    if current:
        packed.append(current)
    n = len(packed)
    count = min(count, n)
    batches = []
    for k in range(count):
        pairs = packed[(2 * k + 1) * n // (2 * count)]
        rows, max_s, max_t = len(pairs), max(p[0] for p in pairs), max(p[1] for p in pairs)
        src = torch.zeros(rows, max_s, dtype=torch.long)
        tgt_in = torch.zeros(rows, max_t, dtype=torch.long)
        tgt_out = torch.zeros(rows, max_t, dtype=torch.long)
        for r, (S, T) in enumerate(pairs):
            src[r, :S - 1] = torch.tensor([FIRST_ID + rng.uniform(vocab - FIRST_ID) for _ in range(S - 1)])
            src[r, S - 1] = EOS
            ids = torch.tensor([FIRST_ID + rng.uniform(vocab - FIRST_ID) for _ in range(T - 1)], dtype=torch.long)
            tgt_in[r, 0] = BOS
            tgt_in[r, 1:T] = ids
            tgt_out[r, :T - 1] = ids
            tgt_out[r, T - 1] = EOS
        batches.append((src, tgt_in, tgt_out, pairs))
    return batches


def synthetic_sentences(count, vocab, seed):
    rng = SplitMix64(seed + 1)
    sentences = []
    for _ in range(count):
        s = draw_source_pieces(rng)
        sentences.append([FIRST_ID + rng.uniform(vocab - FIRST_ID) for _ in range(s)])
    return sentences


def training_flops(c, pairs):
    """docs/design.md "Model FLOPs and MFU"; the same count as include/trafo/bench/flops.h."""
    d, f, e, dl = c["d_model"], c["d_ff"], c["encoder_layers"], c["decoder_layers"]
    w_source = e * (4 * d * d + 2 * d * f) + dl * 2 * d * d
    w_target = dl * (6 * d * d + 2 * d * f) + d * c["vocab_size"]
    total = 0.0
    for S, T in pairs:
        total += 6 * (S * w_source + T * w_target) + 12 * d * (e * S * S + dl * (T * T + T * S))
    return total


# ---- the model ----

class Seq2Seq(nn.Module):
    def __init__(self, c):
        super().__init__()
        d = c["d_model"]
        self.c = c
        self.scale = math.sqrt(d)
        self.embedding = nn.Embedding(c["vocab_size"], d, padding_idx=PAD)
        position = torch.arange(c["max_positions"], dtype=torch.float).unsqueeze(1)
        frequency = torch.exp(torch.arange(0, d, 2, dtype=torch.float) * (-math.log(10000.0) / d))
        table = torch.zeros(c["max_positions"], d)  # [P,d]
        table[:, 0::2] = torch.sin(position * frequency)
        table[:, 1::2] = torch.cos(position * frequency)
        self.register_buffer("positions", table, persistent=False)
        self.dropout = nn.Dropout(c["dropout"])
        self.transformer = nn.Transformer(d, c["heads"], c["encoder_layers"], c["decoder_layers"], c["d_ff"],
                                          c["dropout"], c["activation"], batch_first=True,
                                          norm_first=c["norm"] == "pre")
        if c["norm"] != "pre":  # post-norm: no final norms (as trafo)
            self.transformer.encoder.norm = None
            self.transformer.decoder.norm = None
        self.output = None if c["tie_embeddings"] else nn.Linear(d, c["vocab_size"])
        nn.init.normal_(self.embedding.weight, 0.0, d ** -0.5)
        with torch.no_grad():
            self.embedding.weight[PAD].zero_()

    def embed(self, tokens, offset=0):  # [B,T] -> [B,T,d]
        T = tokens.size(1)
        return self.dropout(self.embedding(tokens) * self.scale + self.positions[offset:offset + T])

    def logits(self, hidden):  # [..., d] -> [..., V]
        return F.linear(hidden, self.embedding.weight) if self.output is None else self.output(hidden)

    def encode(self, src):
        return self.transformer.encoder(self.embed(src), src_key_padding_mask=src.eq(PAD))

    def forward(self, src, tgt_in):
        T = tgt_in.size(1)
        causal = nn.Transformer.generate_square_subsequent_mask(T, device=src.device)
        # Targets are right-padded: the causal mask alone keeps real positions off the padding,
        # so no target padding mask (which would turn SDPA's causal kernel into a masked one).
        src_pad = src.eq(PAD)
        hidden = self.transformer(self.embed(src), self.embed(tgt_in), tgt_mask=causal, src_key_padding_mask=src_pad,
                                  memory_key_padding_mask=src_pad, tgt_is_causal=True)
        return self.logits(hidden)


class MarianReference(nn.Module):
    """--model marian: transformers' MarianMTModel as OPUS-MT has it (one embedding shared by both
    stacks and the output, final_logits_bias a buffer), post-norm with sines and cosines in halves,
    as a transformers user fine-tunes it; the batches' pad id is its pad_token_id."""

    def __init__(self, c):
        super().__init__()
        from transformers import MarianConfig, MarianMTModel
        config = MarianConfig(vocab_size=c["vocab_size"], decoder_vocab_size=c["vocab_size"], d_model=c["d_model"],
                              encoder_layers=c["encoder_layers"], decoder_layers=c["decoder_layers"],
                              encoder_attention_heads=c["heads"], decoder_attention_heads=c["heads"],
                              encoder_ffn_dim=c["d_ff"], decoder_ffn_dim=c["d_ff"],
                              activation_function=c["activation"], max_position_embeddings=c["max_positions"],
                              dropout=c["dropout"], attention_dropout=0.0, activation_dropout=0.0,
                              pad_token_id=PAD, eos_token_id=EOS, decoder_start_token_id=PAD,
                              scale_embedding=True, share_encoder_decoder_embeddings=True)
        self.model = MarianMTModel(config)

    def forward(self, src, tgt_in):
        return self.model(input_ids=src, attention_mask=src.ne(PAD), decoder_input_ids=tgt_in).logits


def make_model(c, seed, device="cpu"):
    torch.manual_seed(seed)
    return (MarianReference(c) if c.get("model") == "marian" else Seq2Seq(c)).to(device)


# ---- training ----

def make_training_step(c, bf16, seed, device, loop="reference"):
    """One step as a PyTorch user writes it; returns the smoothed loss per target token.

    loop "reference": Adam's default implementation, the loss read back every step. "plain": the
    loop a user tuning for a GPU writes: fused Adam, the loss read back only when asked (a tensor is
    returned). "compile": that, with the model under torch.compile (dynamic shapes)."""
    model = make_model(c, seed, device)
    model.train()
    # transformers' Trainer uses AdamW, with no weight decay by default: Adam's update.
    kind = torch.optim.AdamW if c.get("model") == "marian" else torch.optim.Adam
    fused = {"fused": True} if loop != "reference" else {}
    optimizer = kind(model.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-9, weight_decay=0.0, **fused)
    forward = torch.compile(model, dynamic=True) if loop == "compile" else model

    def step(batch):
        src, tgt_in, tgt_out, pairs = batch
        tokens = sum(T for _, T in pairs)
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
            logits = forward(src, tgt_in)  # [B,T,V]
        loss = F.cross_entropy(logits.float().view(-1, logits.size(-1)), tgt_out.view(-1), ignore_index=PAD,
                               label_smoothing=0.1, reduction="sum")
        (loss / tokens).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        return loss.item() / tokens if loop == "reference" else loss.detach() / tokens

    return step


def measure_training(c, batches, bf16, warmup, steps, rounds, seed, device, log, loop="reference"):
    step = make_training_step(c, bf16, seed, device, loop)
    n = len(batches)
    for i in range(warmup):
        step(batches[i % n])
    tokens = sum(sum(T for _, T in batches[i % n][3]) for i in range(steps))
    flops = sum(training_flops(c, batches[i % n][3]) for i in range(steps))
    seconds = []
    for r in range(rounds):
        started = time.perf_counter()
        for i in range(steps):
            loss = step(batches[i % n])
        synchronize(device)
        seconds.append(time.perf_counter() - started)
        loss = float(loss)
        log(f"training {'bf16' if bf16 else 'fp32'} round {r + 1}: {steps} steps in {seconds[-1]:.2f} s, "
            f"{tokens / seconds[-1]:.0f} target tokens/s, loss {loss:.3f}")
    return tokens, flops, seconds


def memory_trend(c, batches, bf16, steps, seed, device, log):
    """RSS at step steps/5 and at the end (docs/design.md "Flat memory")."""
    step = make_training_step(c, bf16, seed, device)
    early_step, early = max(1, steps // 5), 0.0
    for i in range(1, steps + 1):
        step(batches[(i - 1) % len(batches)])
        if i == early_step:
            early = memory_usage()[0]
        if i % 100 == 0:
            log(f"memory trend step {i}/{steps}: RSS {memory_usage()[0]:.1f} MB")
    return early_step, early, memory_usage()[0]


# ---- greedy decoding ----

class RecomputingDecoder:
    """The PyTorch tutorial's greedy decoder: the decoder reruns over the whole prefix each step."""

    def __init__(self, model, src):
        self.model = model
        self.src_pad = src.eq(PAD)            # [N,S]
        self.memory = model.encode(src)       # [N,S,d]
        self.prefix = None                    # [N,t]

    def next_log_probs(self, tokens, step):   # tokens [N] -> [N,V]
        step_tokens = tokens.unsqueeze(1)
        self.prefix = step_tokens if self.prefix is None else torch.cat([self.prefix, step_tokens], 1)
        T = self.prefix.size(1)
        causal = nn.Transformer.generate_square_subsequent_mask(T, device=self.prefix.device)
        hidden = self.model.transformer.decoder(self.model.embed(self.prefix), self.memory, tgt_mask=causal,
                                                memory_key_padding_mask=self.src_pad, tgt_is_causal=True)
        return F.log_softmax(self.model.logits(hidden[:, -1]).float(), -1)

    def select(self, index):
        self.src_pad = self.src_pad.index_select(0, index)
        self.memory = self.memory.index_select(0, index)
        self.prefix = self.prefix.index_select(0, index)


class CachedDecoder:
    """Greedy steps with a KV cache, by hand over nn.Transformer's decoder layers and weights:
    self-attention K/V grow by one step per call, cross-attention K/V are computed once."""

    def __init__(self, model, src):
        self.model = model
        decoder = model.transformer.decoder
        self.layers, self.final_norm = decoder.layers, decoder.norm
        self.pre_norm = model.c["norm"] == "pre"
        self.h = model.c["heads"]
        self.may_attend = src.ne(PAD)[:, None, None, :]  # [N,1,1,S]
        memory = model.encode(src)                       # [N,S,d]
        d = memory.size(-1)
        self.self_kv = [None] * len(self.layers)
        self.cross_kv = []
        for layer in self.layers:
            mha = layer.multihead_attn
            kv = F.linear(memory, mha.in_proj_weight[d:], mha.in_proj_bias[d:])  # [N,S,2d]
            k, v = self.split(kv, 2)
            self.cross_kv.append((k, v))

    def split(self, x, parts):  # [N,T,parts*d] -> parts × [N,h,T,d_k]
        N, T, _ = x.shape
        return x.view(N, T, parts, self.h, -1).permute(2, 0, 3, 1, 4).unbind(0)

    def merge(self, x):  # [N,h,T,d_k] -> [N,T,d]
        return x.transpose(1, 2).flatten(2)

    def self_block(self, i, layer, y):
        sa = layer.self_attn
        q, k, v = self.split(F.linear(y, sa.in_proj_weight, sa.in_proj_bias), 3)
        if self.self_kv[i] is not None:
            k = torch.cat([self.self_kv[i][0], k], 2)
            v = torch.cat([self.self_kv[i][1], v], 2)
        self.self_kv[i] = (k, v)
        return sa.out_proj(self.merge(F.scaled_dot_product_attention(q, k, v)))  # one new step: no mask

    def cross_block(self, i, layer, y):
        mha = layer.multihead_attn
        d = y.size(-1)
        (q,) = self.split(F.linear(y, mha.in_proj_weight[:d], mha.in_proj_bias[:d]), 1)
        k, v = self.cross_kv[i]
        return mha.out_proj(self.merge(F.scaled_dot_product_attention(q, k, v, attn_mask=self.may_attend)))

    def next_log_probs(self, tokens, step):  # tokens [N] -> [N,V]
        x = self.model.embed(tokens.unsqueeze(1), offset=step)  # [N,1,d]
        for i, layer in enumerate(self.layers):
            ff = lambda y: layer.linear2(layer.activation(layer.linear1(y)))  # noqa: E731
            if self.pre_norm:
                x = x + self.self_block(i, layer, layer.norm1(x))
                x = x + self.cross_block(i, layer, layer.norm2(x))
                x = x + ff(layer.norm3(x))
            else:
                x = layer.norm1(x + self.self_block(i, layer, x))
                x = layer.norm2(x + self.cross_block(i, layer, x))
                x = layer.norm3(x + ff(x))
        if self.final_norm is not None:
            x = self.final_norm(x)
        return F.log_softmax(self.model.logits(x[:, 0]).float(), -1)

    def select(self, index):
        self.may_attend = self.may_attend.index_select(0, index)
        self.self_kv = [(k.index_select(0, index), v.index_select(0, index)) for k, v in self.self_kv]
        self.cross_kv = [(k.index_select(0, index), v.index_select(0, index)) for k, v in self.cross_kv]


def max_output_length(pieces, max_positions):
    """include/trafo/decode/translator.h with max_length_a 1.5, max_length_b 10."""
    return int(min(max(math.floor(1.5 * pieces + 10), 0), max_positions - 1))


def pad_sources(sentences):
    """Ids + eos, padded: [B,S]."""
    src = torch.full((len(sentences), max(len(s) for s in sentences) + 1), PAD, dtype=torch.long)
    for r, s in enumerate(sentences):
        src[r, :len(s)] = torch.tensor(s)
        src[r, len(s)] = EOS
    return src


def check_decoders(c, seed, steps=12):
    """Largest difference between the two decoders' log-probabilities, fed the same random
    tokens step by step, with rows dropped half way."""
    model = make_model(c, seed).eval()
    rng = SplitMix64(seed + 2)
    with torch.inference_mode():
        src = pad_sources(synthetic_sentences(6, c["vocab_size"], seed))
        decoders = [RecomputingDecoder(model, src), CachedDecoder(model, src)]
        tokens = torch.full((src.size(0),), BOS, dtype=torch.long)
        worst = 0.0
        for step in range(steps):
            a, b = (d.next_log_probs(tokens, step) for d in decoders)
            worst = max(worst, (a - b).abs().max().item())
            tokens = torch.tensor([FIRST_ID + rng.uniform(c["vocab_size"] - FIRST_ID) for _ in range(a.size(0))])
            if step == steps // 2:
                index = torch.tensor([0, 2, 3])
                for d in decoders:
                    d.select(index)
                tokens = tokens.index_select(0, index)
    return worst


def greedy_batch(model, decoder_class, sentences):
    """Greedy search over one batch as trafo does it: pad and bos banned, eos forced at the length
    limit, finished rows leave the batch. Returns the output pieces of each sentence."""
    device = model.positions.device
    src = pad_sources(sentences).to(device)
    limits = torch.tensor([max_output_length(len(s), model.c["max_positions"]) for s in sentences],
                          device=device)  # [N]
    not_eos = torch.ones(1, model.c["vocab_size"], dtype=torch.bool, device=device)
    not_eos[0, EOS] = False
    decoder = decoder_class(model, src)
    outputs = [[] for _ in sentences]
    alive = list(range(len(sentences)))
    tokens = torch.full((len(sentences),), BOS, dtype=torch.long, device=device)
    step = 0
    while alive:
        log_probs = decoder.next_log_probs(tokens, step)  # [N,V]
        log_probs[:, PAD] = -math.inf
        log_probs[:, BOS] = -math.inf
        log_probs.masked_fill_(limits.le(step).unsqueeze(1) & not_eos, -math.inf)
        tokens = log_probs.argmax(-1)  # [N]
        keep = []
        for i, token in enumerate(tokens.tolist()):
            outputs[alive[i]].append(token)
            if token != EOS:
                keep.append(i)
        step += 1
        if len(keep) < len(alive):
            alive = [alive[i] for i in keep]
            if alive:
                index = torch.tensor(keep, device=device)
                decoder.select(index)
                tokens = tokens.index_select(0, index)
                limits = limits.index_select(0, index)
    return outputs


def decode_all(model, decoder_class, sentences, batch_tokens):
    """Longest first, packed under `batch_tokens` source pieces (+ eos) as trafo's Translator."""
    order = sorted(range(len(sentences)), key=lambda i: -len(sentences[i]))
    outputs = [None] * len(sentences)
    batch, width = [], 0

    def flush():
        for i, out in zip(batch, greedy_batch(model, decoder_class, [sentences[i] for i in batch])):
            outputs[i] = out

    for i in order:
        length = len(sentences[i]) + 1
        if batch and max(width, length) * (len(batch) + 1) > batch_tokens:
            flush()
            batch, width = [], 0
        batch.append(i)
        width = max(width, length)
    if batch:
        flush()
    return outputs


def silence_eos(model):
    """As trafo bench: eos logits become 0, so a random model decodes to the length limit."""
    with torch.no_grad():
        if model.output is None:
            model.embedding.weight[EOS].zero_()
        else:
            model.output.weight[EOS].zero_()
            model.output.bias[EOS].zero_()


def measure_decoding(c, sentences, decoder_class, batch_tokens, rounds, seed, device, log):
    model = make_model(c, seed, device)
    model.eval()
    silence_eos(model)
    seconds, tokens = [], 0
    with torch.inference_mode():
        decode_all(model, decoder_class, sentences[:4], batch_tokens)  # warm-up
        for r in range(rounds):
            started = time.perf_counter()
            outputs = decode_all(model, decoder_class, sentences, batch_tokens)
            seconds.append(time.perf_counter() - started)
            tokens = sum(len(o) for o in outputs)
            log(f"greedy decoding ({decoder_class.__name__}, batch tokens {batch_tokens}) round {r + 1}: "
                f"{len(sentences)} sentences, {tokens} tokens in {seconds[-1]:.2f} s")
    return tokens, seconds, outputs


# ---- the machine ----

def synchronize(device):
    """Waits for the work queued on a CUDA device; CPU ops return when done."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def matmul_peak_flops(dtype, device, size=2048, min_seconds=1.0):
    """Best FLOP/s of size × size products: one warm-up, then at least 3 timings and min_seconds.
    On CUDA a timing is 20 products between two synchronisations, as trafo bench times them."""
    torch.manual_seed(0)
    products = 20 if device.type == "cuda" else 1
    with torch.inference_mode():
        a = torch.randn(size, size).to(device=device, dtype=dtype)
        b = torch.randn(size, size).to(device=device, dtype=dtype)
        c = torch.mm(a, b)
        synchronize(device)
        best, total, runs = 0.0, 0.0, 0
        while runs < 3 or total < min_seconds:
            started = time.perf_counter()
            for _ in range(products):
                torch.mm(a, b, out=c)
            synchronize(device)
            seconds = time.perf_counter() - started
            total += seconds
            runs += 1
            best = max(best, products * 2.0 * size ** 3 / seconds)
    return best


def memory_usage():
    """(VmRSS, VmHWM) in MB from /proc/self/status."""
    values = {}
    with open("/proc/self/status") as status:
        for line in status:
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                values[key] = float(rest.split()[0]) / 1024.0
    return values.get("VmRSS", 0.0), values.get("VmHWM", 0.0)


# ---- the report ----

def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--config", help="TOML config of trafo train: its model keys and threads apply, "
                                     "the command line wins; other keys are ignored")
    p.add_argument("--json", action="store_true", help="one JSON object per line instead of a table")
    p.add_argument("--threads", type=int, help="intra-op threads (0: all cores; default 0)")
    p.add_argument("--device", choices=["cpu", "cuda", "auto"], default="cpu",
                   help="where the model runs: cpu, cuda, or auto (cuda when one is available)")
    p.add_argument("--precision", choices=["fp32", "bf16", "both", "auto"], default="auto",
                   help="auto: both where the device has native bf16 (a CPU with avx512_bf16 or amx_bf16, "
                        "CUDA compute capability >= 8.0), else fp32")
    p.add_argument("--batch-tokens", type=int, default=4096)
    p.add_argument("--train-steps", type=int, default=0, help="default 30, or 8 for d-model >= 512")
    p.add_argument("--warmup-steps", type=int, default=-1, help="default 5, or 2 for d-model >= 512")
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--decode-sentences", type=int, default=32)
    p.add_argument("--leak-steps", type=int, default=0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--fingerprint", action="store_true",
                   help="print the synthetic batches' and sentences' shapes and id sums as one JSON line, then exit "
                        "(tests/bench_test.cpp compares them with trafo's)")
    p.add_argument("--model", choices=["torch", "marian"], default="torch",
                   help="torch: torch.nn.Transformer as written above; marian: transformers' MarianMTModel "
                        "(training only: give --decode-sentences 0)")
    p.add_argument("--loop", choices=["reference", "plain", "compile"], default="reference",
                   help="reference: Adam's default implementation, the loss read every step; plain: fused Adam, "
                        "the loss read once a round; compile: plain with the model under torch.compile")
    p.add_argument("--check", action="store_true",
                   help="check that the cached decoder agrees with the recomputing one, then exit")
    defaults = {"vocab-size": 8000, "d-model": 256, "heads": 4, "encoder-layers": 3, "decoder-layers": 3,
                "d-ff": 1024, "dropout": 0.1, "activation": "relu", "norm": "pre", "tie-embeddings": True,
                "max-positions": 1024}  # trafo's ModelConfig defaults
    for key, value in defaults.items():
        kind = (lambda v: v.lower() == "true") if isinstance(value, bool) else type(value)
        p.add_argument("--" + key, type=kind, help=f"(default {value})")
    args = p.parse_args(argv)
    from_file = {}
    if args.config:
        with open(args.config, "rb") as f:
            from_file = {k: v for k, v in tomllib.load(f).items() if k in FILE_KEYS}
    for key in list(defaults) + ["threads"]:
        attr = key.replace("-", "_")
        if getattr(args, attr) is None:
            setattr(args, attr, from_file.get(key, defaults.get(key, 0)))
    config = {key.replace("-", "_"): getattr(args, key.replace("-", "_")) for key in defaults}
    config["model"] = args.model
    if args.model == "marian" and args.decode_sentences > 0:
        p.error("--model marian measures training only: give --decode-sentences 0")
    return args, config


def main(argv):
    warnings.filterwarnings("ignore")  # nn.Transformer's notes on nested tensors and norm_first
    args, c = parse_args(argv)
    large = c["d_model"] >= 512
    steps = args.train_steps or (8 if large else 30)
    warmup = args.warmup_steps if args.warmup_steps >= 0 else (2 if large else 5)
    threads = args.threads if args.threads > 0 else os.cpu_count()  # as trafo: all logical cores
    torch.set_num_threads(threads)
    if args.device == "cuda" and not torch.cuda.is_available():
        print("pytorch_reference.py: error: --device cuda: no CUDA device is available", file=sys.stderr)
        return 2
    device = torch.device("cuda" if args.device == "cuda" or (args.device == "auto" and torch.cuda.is_available())
                          else "cpu")
    if device.type == "cuda":
        native_bf16 = torch.cuda.get_device_capability(device)[0] >= 8
    else:
        capabilities = torch._C._cpu._get_cpu_capability()
        native_bf16 = bool(capabilities.get("avx512_bf16") or capabilities.get("amx_bf16"))
    if args.precision == "auto":
        args.precision = "both" if native_bf16 else "fp32"
    precisions = [p for p in ("fp32", "bf16") if args.precision in (p, "both")]

    def log(message):
        print(f"[{time.strftime('%H:%M:%S')}] reference: {message}", file=sys.stderr, flush=True)

    def report(record, row):
        print(json.dumps(record) if args.json else row, flush=True)

    def row(what, dtype, value):
        return f"{what:<40} {dtype:<6} {value}"

    if args.check:
        worst = check_decoders(c, args.seed)
        print(f"cached vs recomputing decoder: largest log-probability difference {worst:.2e}")
        return 0 if worst < 1e-4 else 1

    batches = synthetic_batches(min(steps, 10), args.batch_tokens, c["vocab_size"], args.seed)
    if args.fingerprint:
        sentences = synthetic_sentences(args.decode_sentences, c["vocab_size"], args.seed)
        print(json.dumps({"batches": [[b[0].size(0), b[0].size(1), b[1].size(1), b[0].sum().item(), b[1].sum().item(),
                                       b[2].sum().item()] for b in batches],
                          "sentences": [[len(x), sum(x)] for x in sentences]}))
        return 0
    n = len(batches)
    flops = sum(training_flops(c, b[3]) for b in batches)
    target = sum(T for b in batches for _, T in b[3])
    source = sum(S for b in batches for S, _ in b[3])
    rows = sum(len(b[3]) for b in batches)
    parameters = sum(p.numel() for p in make_model(c, args.seed).parameters())
    batches = [(src.to(device), tgt_in.to(device), tgt_out.to(device), pairs) for src, tgt_in, tgt_out, pairs in batches]
    report({"record": "setup", "impl": "pytorch", "loop": args.loop, "torch": torch.__version__, "threads": threads,
            "device": str(device), "native_bf16": native_bf16, "vocab_size": c["vocab_size"], "d_model": c["d_model"], "heads": c["heads"],
            "encoder_layers": c["encoder_layers"], "decoder_layers": c["decoder_layers"], "d_ff": c["d_ff"],
            "norm": c["norm"], "parameters": parameters, "batch_tokens": args.batch_tokens, "batches": n,
            "mean_sentences": rows / n, "mean_source_tokens": source / n, "mean_target_tokens": target / n,
            "model_flops_per_target_token": flops / target, "warmup_steps": warmup, "train_steps": steps,
            "rounds": args.rounds, "decode_sentences": args.decode_sentences, "seed": args.seed},
           f"pytorch reference (torch {torch.__version__}): d_model {c['d_model']}, heads {c['heads']}, layers "
           f"{c['encoder_layers']}+{c['decoder_layers']}, d_ff {c['d_ff']}, vocab {c['vocab_size']}, {c['norm']} norm, "
           f"{parameters / 1e6:.1f} M parameters, {threads} thread{'' if threads == 1 else 's'}, {device}\n"
           f"{n} batches under {args.batch_tokens} tokens: {rows / n:.0f} sentences, {source / n:.0f} source and "
           f"{target / n:.0f} target tokens on average; {flops / target / 1e6:.1f} MFLOP per target token (training)\n"
           f"steps: {warmup} warm-up + {steps} timed, {args.rounds} round{'' if args.rounds == 1 else 's'}\n\n"
           + row("measurement", "dtype", "value"))

    peak = {}
    for p in precisions:
        peak[p] = matmul_peak_flops(torch.bfloat16 if p == "bf16" else torch.float, device)
        report({"record": "matmul_peak", "precision": p, "size": 2048, "gflops": peak[p] / 1e9},
               row("matmul peak 2048x2048", p, f"{peak[p] / 1e9:.1f} GFLOP/s"))
    for p in precisions:
        tokens, round_flops, seconds = measure_training(c, batches, p == "bf16", warmup, steps, args.rounds,
                                                        args.seed, device, log, args.loop)
        per_s = statistics.median(tokens / s for s in seconds)
        flops_per_s = statistics.median(round_flops / s for s in seconds)
        step_ms = 1000 * statistics.median(seconds) / steps
        mfu = flops_per_s / peak[p]
        report({"record": "train", "precision": p, "tgt_tokens_per_s": per_s, "step_ms": step_ms,
                "model_gflops_per_s": flops_per_s / 1e9, "mfu": mfu, "steps": steps, "rounds_seconds": seconds},
               row("training", p, f"{per_s:>8.0f} tgt tok/s  step {step_ms:.0f} ms  {flops_per_s / 1e9:.1f} GFLOP/s"
                                  f"  MFU {100 * mfu:.1f}%"))
    rss, peak_rss = memory_usage()
    report({"record": "memory", "rss_mb": rss, "peak_rss_mb": peak_rss},
           row("peak RSS after training", "", f"{peak_rss:.0f} MB (now {rss:.0f} MB)"))

    if args.decode_sentences > 0:
        sentences = synthetic_sentences(args.decode_sentences, c["vocab_size"], args.seed)
        for name, decoder_class in (("recompute", RecomputingDecoder), ("cached", CachedDecoder)):
            for batched in (False, True):
                tokens, seconds, _ = measure_decoding(c, sentences, decoder_class, 4096 if batched else 1,
                                                      args.rounds, args.seed, device, log)
                per_s = statistics.median(tokens / s for s in seconds)
                batching = "batched" if batched else "batch1"
                what = f"greedy decoding, {'batched (4096)' if batched else 'batch 1'}, {name}"
                report({"record": "decode", "decoder": name, "batching": batching, "precision": "fp32",
                        "sentences": len(sentences), "tgt_tokens": tokens, "tgt_tokens_per_s": per_s,
                        "rounds_seconds": seconds},
                       row(what, "fp32", f"{per_s:>8.0f} tgt tok/s  ({tokens} tokens)"))

    if args.leak_steps > 0:
        for p in precisions:
            early_step, early, end = memory_trend(c, batches, p == "bf16", args.leak_steps, args.seed, device, log)
            growth = 100 * (end - early) / early if early > 0 else 0.0
            report({"record": "memory_trend", "precision": p, "early_step": early_step, "early_rss_mb": early,
                    "steps": args.leak_steps, "end_rss_mb": end, "growth_percent": growth,
                    "peak_rss_mb": memory_usage()[1]},
                   row("RSS trend of training", p, f"{early:.0f} MB at step {early_step} -> {end:.0f} MB at step "
                                                   f"{args.leak_steps} ({growth:+.1f}%)"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
