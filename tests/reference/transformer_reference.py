"""PyTorch reference for trafo's Transformer: the same model written with torch.nn
(TransformerEncoderLayer / TransformerDecoderLayer, batch_first), fed trafo's weights.

Usage: python transformer_reference.py CASE.pt CONFIG.json
CASE.pt holds trafo's weights (by their C++ names), the batch `src`, `tgt_in`, and
trafo's `logits`. Prints the largest difference over real target positions and exits
non-zero when it exceeds 1e-4. Runs with the project's own interpreter (.venv/bin/python).
"""
import json
import math
import sys

import torch
from torch import nn


def build(config, w):
    d, heads, pre = config["d_model"], config["heads"], config["norm"] == "pre"
    common = dict(d_model=d, nhead=heads, dim_feedforward=config["d_ff"], dropout=0.0,
                  activation=config["activation"], batch_first=True, norm_first=pre)
    encoder = nn.ModuleList(nn.TransformerEncoderLayer(**common) for _ in range(config["encoder_layers"]))
    decoder = nn.ModuleList(nn.TransformerDecoderLayer(**common) for _ in range(config["decoder_layers"]))
    with torch.no_grad():
        for i, layer in enumerate(encoder):
            p = f"encoder_layers.{i}."
            layer.self_attn.in_proj_weight.copy_(w[p + "self_attention.qkv_proj.weight"])
            layer.self_attn.in_proj_bias.copy_(w[p + "self_attention.qkv_proj.bias"])
            layer.self_attn.out_proj.weight.copy_(w[p + "self_attention.out_proj.weight"])
            layer.self_attn.out_proj.bias.copy_(w[p + "self_attention.out_proj.bias"])
            for ours, theirs in (("linear1", layer.linear1), ("linear2", layer.linear2)):
                theirs.weight.copy_(w[p + f"feed_forward.{ours}.weight"])
                theirs.bias.copy_(w[p + f"feed_forward.{ours}.bias"])
            for ours, theirs in (("attention_residual", layer.norm1), ("feed_forward_residual", layer.norm2)):
                theirs.weight.copy_(w[p + ours + ".norm.weight"])
                theirs.bias.copy_(w[p + ours + ".norm.bias"])
        for i, layer in enumerate(decoder):
            p = f"decoder_layers.{i}."
            layer.self_attn.in_proj_weight.copy_(w[p + "self_attention.qkv_proj.weight"])
            layer.self_attn.in_proj_bias.copy_(w[p + "self_attention.qkv_proj.bias"])
            layer.self_attn.out_proj.weight.copy_(w[p + "self_attention.out_proj.weight"])
            layer.self_attn.out_proj.bias.copy_(w[p + "self_attention.out_proj.bias"])
            cross = layer.multihead_attn
            cross.in_proj_weight.copy_(torch.cat([w[p + "cross_attention.q_proj.weight"],
                                                  w[p + "cross_attention.kv_proj.weight"]]))
            cross.in_proj_bias.copy_(torch.cat([w[p + "cross_attention.q_proj.bias"],
                                                w[p + "cross_attention.kv_proj.bias"]]))
            cross.out_proj.weight.copy_(w[p + "cross_attention.out_proj.weight"])
            cross.out_proj.bias.copy_(w[p + "cross_attention.out_proj.bias"])
            for ours, theirs in (("linear1", layer.linear1), ("linear2", layer.linear2)):
                theirs.weight.copy_(w[p + f"feed_forward.{ours}.weight"])
                theirs.bias.copy_(w[p + f"feed_forward.{ours}.bias"])
            for ours, theirs in (("self_residual", layer.norm1), ("cross_residual", layer.norm2),
                                 ("feed_forward_residual", layer.norm3)):
                theirs.weight.copy_(w[p + ours + ".norm.weight"])
                theirs.bias.copy_(w[p + ours + ".norm.bias"])
    return encoder.eval(), decoder.eval()


def layer_norm(x, w, prefix):
    return nn.functional.layer_norm(x, x.shape[-1:], w[prefix + ".weight"], w[prefix + ".bias"])


def logits(config, w, src, tgt_in):
    d, pad = config["d_model"], config["pad_id"]
    encoder, decoder = build(config, w)
    source_table = w["source_embedding.embedding.weight"]
    target_table = source_table if config["tie_embeddings"] else w["target_embedding.embedding.weight"]
    positions = w["positions.table"]

    def embed(table, tokens):
        return table[tokens] * math.sqrt(d) + positions[: tokens.shape[1]]

    src_padding = src.eq(pad)
    causal = nn.Transformer.generate_square_subsequent_mask(tgt_in.shape[1])
    with torch.no_grad():
        x = embed(source_table, src)
        for layer in encoder:
            x = layer(x, src_key_padding_mask=src_padding)
        if config["norm"] == "pre":
            x = layer_norm(x, w, "encoder_norm")
        y = embed(target_table, tgt_in)
        for layer in decoder:
            y = layer(y, x, tgt_mask=causal, tgt_is_causal=True, memory_key_padding_mask=src_padding)
        if config["norm"] == "pre":
            y = layer_norm(y, w, "decoder_norm")
        if config["tie_embeddings"]:
            return y @ source_table.t()
        return y @ w["output_projection.weight"].t() + w["output_projection.bias"]


def main():
    case = torch.load(sys.argv[1], weights_only=False)
    with open(sys.argv[2]) as f:
        config = json.load(f)
    ours = logits(config, case, case["src"], case["tgt_in"])
    real = case["tgt_in"].ne(config["pad_id"])
    difference = (ours - case["logits"]).abs()[real].max().item()
    print(f"max |logits difference| = {difference:.3e}")
    sys.exit(0 if difference <= 1e-4 else 1)


if __name__ == "__main__":
    main()
