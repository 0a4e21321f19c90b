#!/usr/bin/env python3
"""Checks a model.bin written by `trafo export --format ctranslate2` against the one the installed
ctranslate2 wheel's own TransformerSpec writes for the same shapes: the header, every variable's
name, dtype and shape, and the aliases. Exit 0 when they agree; else the differences and exit 1.

Usage: tests/ctranslate2_layout.py MODEL_BIN pre|post relu|gelu tied|tied-bias|untied none|int8|bfloat16 HEADS
                                   [MODEL_BIN ...]
(tied-bias: tied, with an output bias). Each group of six arguments is one check, all in one process
(the wheel takes seconds to import); exit 0 when every one agrees.
"""
import os
import struct
import sys
import tempfile

import numpy as np
from ctranslate2.specs import common_spec, transformer_spec

def read_bin(path):
    b = open(path,'rb').read(); o = 0
    def u(fmt):
        nonlocal o; v = struct.unpack_from(fmt, b, o); o += struct.calcsize(fmt); return v[0]
    def s():
        nonlocal o; n = u('H'); t = b[o:o+n-1].decode(); o += n; return t
    ver = u('I'); name = s(); rev = u('I'); n = u('I'); out = {}
    for _ in range(n):
        nm = s(); nd = u('B'); shape = tuple(u('I') for _ in range(nd)); dt = u('B'); nb = u('I'); o += nb
        out[nm] = (dt, shape)
    na = u('I'); al = {}
    for _ in range(na): a = s(); al[a] = s()
    return ver, name, rev, out, al
def spec_bin(pre, act, tied, bias, L, H, d, F, V, P, q):
    spec = transformer_spec.TransformerSpec.from_config(L, H, pre_norm=pre, activation=act)
    r = lambda *s: np.random.rand(*s).astype(np.float32)
    enc, dec = spec.encoder, spec.decoder
    E = r(V,d); enc.embeddings[0].weight = E; dec.embeddings.weight = E if tied else r(V,d)
    enc.position_encodings.encodings = r(P,d); dec.position_encodings.encodings = enc.position_encodings.encodings
    def ln(l): l.gamma = r(d); l.beta = r(d)
    def lin(l, o, i): l.weight = r(o,i); l.bias = r(o)
    for Ly in enc.layer:
        ln(Ly.self_attention.layer_norm); lin(Ly.self_attention.linear[0],3*d,d); lin(Ly.self_attention.linear[1],d,d)
        ln(Ly.ffn.layer_norm); lin(Ly.ffn.linear_0,F,d); lin(Ly.ffn.linear_1,d,F)
    for Ly in dec.layer:
        ln(Ly.self_attention.layer_norm); lin(Ly.self_attention.linear[0],3*d,d); lin(Ly.self_attention.linear[1],d,d)
        ln(Ly.attention.layer_norm); lin(Ly.attention.linear[0],d,d); lin(Ly.attention.linear[1],2*d,d); lin(Ly.attention.linear[2],d,d)
        ln(Ly.ffn.layer_norm); lin(Ly.ffn.linear_0,F,d); lin(Ly.ffn.linear_1,d,F)
    if pre: ln(enc.layer_norm); ln(dec.layer_norm)
    dec.projection.weight = E if tied else r(V,d)
    if bias: dec.projection.bias = r(V)
    voc = ["t%d"%i for i in range(V)]
    spec.register_source_vocabulary(voc); spec.register_target_vocabulary(voc)
    spec.validate(); spec.optimize(quantization=q)
    t = tempfile.mkdtemp(); spec.save(t); return read_bin(os.path.join(t,'model.bin'))
def check(path, norm, activation, tying, quantization, heads):
    """Prints how trafo's model.bin at `path` differs from the wheel's; True when it does not."""
    mine = read_bin(path); pre = norm == 'pre'
    act = common_spec.Activation.RELU if activation == 'relu' else common_spec.Activation.GELU
    tied = tying in ('tied', 'tied-bias'); bias = tying != 'tied'; q = None if quantization == 'none' else quantization
    v = mine[3]
    L = (sum(1 for k in v if k.startswith('encoder/layer_') and k.endswith('ffn/linear_0/weight')), sum(1 for k in v if k.startswith('decoder/layer_') and k.endswith('ffn/linear_0/weight')))
    d = v['decoder/layer_0/ffn/linear_1/weight'][1][0]; F = v['decoder/layer_0/ffn/linear_0/weight'][1][0]
    V = v['decoder/embeddings/weight'][1][0]; P = v['decoder/position_encodings/encodings'][1][0]
    ref = spec_bin(pre, act, tied, bias, L, int(heads), d, F, V, P, q)
    if mine[:3] != ref[:3]: print(path, "header", mine[:3], "expected", ref[:3])
    for k in sorted(set(mine[3]) ^ set(ref[3])): print(path, "only in", "trafo's" if k in mine[3] else "the wheel's", k)
    for k in sorted(set(mine[3]) & set(ref[3])):
        if mine[3][k] != ref[3][k]: print(path, "differs", k, mine[3][k], "expected", ref[3][k])
    if mine[4] != ref[4]: print(path, "aliases", mine[4], "expected", ref[4])
    print(path, len(mine[3]), "variables,", len(mine[4]), "aliases")
    return mine[1:] == ref[1:] and mine[0] == ref[0]
args = sys.argv[1:]
assert args and len(args) % 6 == 0, __doc__
sys.exit(0 if all([check(*args[i:i + 6]) for i in range(0, len(args), 6)]) else 1)
