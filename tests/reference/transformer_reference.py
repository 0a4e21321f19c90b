"""PyTorch reference for trafo's Transformer, its training loss and its training step.

The same model written with torch.nn (TransformerEncoderLayer / TransformerDecoderLayer,
batch_first), the loss with F.cross_entropy(label_smoothing, ignore_index), the update with
torch.nn.utils.clip_grad_norm_ and torch.optim.Adam / AdamW, all in float64 and fed trafo's fp32
weights and batches: the differences are trafo's own fp32 rounding (or its bugs).

Usage: python transformer_reference.py CASE.pt CONFIG.json
CASE.pt (written by tests/reference_test.cpp) holds, by trafo's parameter names:
  weights, buffers   the model before training
  batch              src, tgt_in, tgt_out [B,*] of one batch, and trafo's results on it: logits
                     [B,T,V], smoothed (the loss per target token), gradients (of smoothed, every
                     parameter)
  training           the trainer's hyper-parameters, the batches, trafo's loss of each step
                     (before its update) and the parameters after the last
Prints one JSON object of differences; tests/reference_test.cpp holds the tolerances.
Runs with the project's own interpreter (.venv/bin/python).
"""
import json
import math
import sys

import torch
from torch import nn
from torch.nn import functional as F


class Reference(nn.Module):
    """trafo's Transformer from torch.nn pieces; trafo_views() names its parameters as trafo does."""

    def __init__(self, config):
        super().__init__()
        self.config = config
        d, vocab, pre = config["d_model"], config["vocab_size"], config["norm"] == "pre"
        common = dict(d_model=d, nhead=config["heads"], dim_feedforward=config["d_ff"], dropout=0.0,
                      activation=config["activation"], batch_first=True, norm_first=pre)
        self.encoder = nn.ModuleList(nn.TransformerEncoderLayer(**common) for _ in range(config["encoder_layers"]))
        self.decoder = nn.ModuleList(nn.TransformerDecoderLayer(**common) for _ in range(config["decoder_layers"]))
        self.source_embedding = nn.Parameter(torch.empty(vocab, d))
        if not config["tie_embeddings"]:
            self.target_embedding = nn.Parameter(torch.empty(vocab, d))
            self.output_projection = nn.Linear(d, vocab)
        if pre:
            self.encoder_norm, self.decoder_norm = nn.LayerNorm(d), nn.LayerNorm(d)
        self.register_buffer("positions", torch.empty(config["max_positions"], d))

    def forward(self, src, tgt_in):
        """src [B,S], tgt_in [B,T] -> logits [B,T,V]"""
        config, pad = self.config, self.config["pad_id"]
        tied, pre = config["tie_embeddings"], config["norm"] == "pre"

        def embed(table, tokens):  # [B,L] -> [B,L,d]: sqrt(d)-scaled embedding plus sinusoids
            return F.embedding(tokens, table, padding_idx=pad) * math.sqrt(config["d_model"]) + \
                self.positions[: tokens.shape[1]]

        src_padding = src.eq(pad)
        causal = nn.Transformer.generate_square_subsequent_mask(tgt_in.shape[1], dtype=self.positions.dtype)
        x = embed(self.source_embedding, src)
        for layer in self.encoder:
            x = layer(x, src_key_padding_mask=src_padding)
        if pre:
            x = self.encoder_norm(x)
        y = embed(self.source_embedding if tied else self.target_embedding, tgt_in)
        for layer in self.decoder:
            y = layer(y, x, tgt_mask=causal, tgt_is_causal=True, memory_key_padding_mask=src_padding)
        if pre:
            y = self.decoder_norm(y)
        return y @ self.source_embedding.t() if tied else self.output_projection(y)

    def trafo_views(self):
        """[(trafo's name, our parameter, its rows or None)] for every parameter trafo has."""
        d = self.config["d_model"]
        views = [("source_embedding.embedding.weight", self.source_embedding, None)]
        if not self.config["tie_embeddings"]:
            views += [("target_embedding.embedding.weight", self.target_embedding, None),
                      ("output_projection.weight", self.output_projection.weight, None),
                      ("output_projection.bias", self.output_projection.bias, None)]

        def linear(name, module, rows=None):
            return [(name + ".weight", module.weight, rows), (name + ".bias", module.bias, rows)]

        def in_projection(name, attention, rows=None):
            return [(name + ".weight", attention.in_proj_weight, rows), (name + ".bias", attention.in_proj_bias, rows)]

        def feed_forward(prefix, layer):
            return linear(prefix + "feed_forward.linear1", layer.linear1) + \
                linear(prefix + "feed_forward.linear2", layer.linear2)

        if self.config["norm"] == "pre":
            views += linear("encoder_norm", self.encoder_norm) + linear("decoder_norm", self.decoder_norm)
        for i, layer in enumerate(self.encoder):
            p = f"encoder_layers.{i}."
            views += in_projection(p + "self_attention.qkv_proj", layer.self_attn)
            views += linear(p + "self_attention.out_proj", layer.self_attn.out_proj)
            views += feed_forward(p, layer)
            views += linear(p + "attention_residual.norm", layer.norm1)
            views += linear(p + "feed_forward_residual.norm", layer.norm2)
        for i, layer in enumerate(self.decoder):
            p = f"decoder_layers.{i}."
            views += in_projection(p + "self_attention.qkv_proj", layer.self_attn)
            views += linear(p + "self_attention.out_proj", layer.self_attn.out_proj)
            # torch packs the cross-attention's Q, K, V into one matrix; trafo keeps Q and KV apart.
            views += in_projection(p + "cross_attention.q_proj", layer.multihead_attn, slice(0, d))
            views += in_projection(p + "cross_attention.kv_proj", layer.multihead_attn, slice(d, 3 * d))
            views += linear(p + "cross_attention.out_proj", layer.multihead_attn.out_proj)
            views += feed_forward(p, layer)
            views += linear(p + "self_residual.norm", layer.norm1) + linear(p + "cross_residual.norm", layer.norm2)
            views += linear(p + "feed_forward_residual.norm", layer.norm3)
        return views


def rows_of(tensor, rows):
    return tensor if rows is None else tensor[rows]


def key_bias_rows(name, d):
    """The key bias inside trafo's `name`, or None. Softmax ignores a shift shared by all keys, so
    its gradient is zero in exact arithmetic: trafo's holds fp32 rounding noise, which Adam turns
    into steps of up to lr that no loss can see."""
    if name.endswith("qkv_proj.bias"):
        return slice(d, 2 * d)
    if name.endswith("kv_proj.bias"):
        return slice(0, d)
    return None


def batch_loss(model, batch, epsilon):
    """What trafo's trainer backpropagates, batch_loss(...).smoothed / target tokens, by
    F.cross_entropy; and the logits."""
    pad = model.config["pad_id"]
    logits = model(batch["src"], batch["tgt_in"])
    flat, target = logits.reshape(-1, logits.shape[-1]), batch["tgt_out"].reshape(-1)
    tokens = target.ne(pad).sum()
    smoothed = F.cross_entropy(flat, target, ignore_index=pad, label_smoothing=epsilon, reduction="sum") / tokens
    return smoothed, logits


def smoothed_by_definition(logits, target, epsilon, pad):
    """docs/design.md "Loss and perplexity", token by token: the mean over the real target tokens t of
    (1 − ε)·(−log p(y_t)) + ε·mean_v(−log p(v))."""
    total, tokens = 0.0, 0
    for row_logits, row_target in zip(logits.reshape(-1, logits.shape[-1]), target.reshape(-1).tolist()):
        if row_target == pad:
            continue
        log_p = torch.log_softmax(row_logits, 0)
        total += (1 - epsilon) * -log_p[row_target].item() + epsilon * -log_p.mean().item()
        tokens += 1
    return total / tokens


def inverse_sqrt_lr(step, peak, warmup):
    """trafo's schedule: peak × min(s / warmup, sqrt(warmup / s)) for the 1-based step s."""
    return peak / math.sqrt(step) if warmup <= 0 else peak * min(step / warmup, math.sqrt(warmup / step))


def train(model, t):
    """The trainer's updates on t's batches; the loss of each step, before its update."""
    params = list(model.parameters())
    make = torch.optim.AdamW if t["optimizer"] == "adamw" else torch.optim.Adam
    optimizer = make(params, lr=t["lr"], betas=(t["beta1"], t["beta2"]), eps=t["eps"], weight_decay=t["weight_decay"])
    losses = []
    for step, batch in enumerate(t["batches"], start=1):
        optimizer.zero_grad(set_to_none=True)
        smoothed, _ = batch_loss(model, batch, t["label_smoothing"])
        smoothed.backward()
        nn.utils.clip_grad_norm_(params, t["clip_norm"] if t["clip_norm"] > 0 else 1e30)
        for group in optimizer.param_groups:
            group["lr"] = inverse_sqrt_lr(step, t["lr"], t["warmup_steps"])
        optimizer.step()
        losses.append(smoothed.item())
    return losses


def max_abs(tensor):
    return tensor.abs().max().item() if tensor.numel() else 0.0


def main():
    case = torch.load(sys.argv[1], weights_only=False)
    with open(sys.argv[2]) as f:
        config = json.load(f)
    torch.set_num_threads(1)
    model = Reference(config).double()
    views = model.trafo_views()
    ours, viewed = {name for name, _, _ in views}, {id(param) for _, param, _ in views}
    report = {"missing": sorted(set(case["weights"]) - ours),
              "extra": sorted(ours - set(case["weights"])) +
              [name for name, param in model.named_parameters() if id(param) not in viewed]}
    if report["missing"] or report["extra"]:
        print(json.dumps(report))
        return

    def load():
        with torch.no_grad():
            for name, param, rows in views:
                rows_of(param, rows).copy_(case["weights"][name])
            model.positions.copy_(case["buffers"]["positions.table"])

    # One batch: logits, loss and the gradient of every parameter after one backward.
    load()
    batch, epsilon, pad = case["batch"], case["training"]["label_smoothing"], config["pad_id"]
    smoothed, logits = batch_loss(model, batch, epsilon)
    smoothed.backward()
    real = batch["tgt_out"].ne(pad)
    report["logits"] = max_abs((logits.detach() - batch["logits"])[real])
    report["smoothed"] = {"trafo": batch["smoothed"], "reference": smoothed.item()}
    report["definition"] = abs(smoothed_by_definition(logits.detach(), batch["tgt_out"], epsilon, pad) -
                               smoothed.item())
    report["gradients"] = {}
    for name, param, rows in views:
        gradient = rows_of(param.grad, rows)
        report["gradients"][name] = {"difference": max_abs(gradient - batch["gradients"][name]),
                                     "scale": max_abs(gradient)}

    # Training from the same weights: the loss of each step, the parameters after the last.
    load()
    t = case["training"]
    steps = zip(t["losses"].tolist(), train(model, t))
    report["steps"] = [{"trafo": mine, "reference": theirs} for mine, theirs in steps]
    # Per parameter as a whole (2-norms): Adam moves every element by about lr whatever the size of
    # its gradient, so an element whose gradient nearly cancels carries that gradient's large
    # relative rounding error into its step; PyTorch's own fp32 run shows the same outliers.
    d, parameters, key_biases = config["d_model"], {}, 0.0
    for name, param, rows in views:
        trained = rows_of(param.detach(), rows)
        difference, movement = trained - t["parameters"][name], trained - case["weights"][name]
        keys = key_bias_rows(name, d)
        if keys is not None:
            key_biases = max(key_biases, max_abs(difference[keys]))
            difference[keys], movement[keys] = 0.0, 0.0
        parameters[name] = {"difference": difference.norm().item(), "movement": movement.norm().item()}
    report["parameters"] = parameters
    report["key_biases"] = {"difference": key_biases,
                            "sum_of_lr": sum(inverse_sqrt_lr(s, t["lr"], t["warmup_steps"])
                                             for s in range(1, len(t["batches"]) + 1))}
    print(json.dumps(report))


if __name__ == "__main__":
    main()
