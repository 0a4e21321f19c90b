#!/usr/bin/env python3
"""The table of bench/gpu.sh: trafo bench against the plain PyTorch loop per model and precision,
then the real run's figures. Usage: gpu_table.py RESULTS_DIR"""
import json
import os
import statistics
import sys


def records(path):
    if not os.path.exists(path):
        return []
    out = []
    with open(path) as f:
        for line in f:
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                pass
    return out


def train_rates(path):
    """{precision: (tgt tok/s, mfu, step ms)} of a bench --json file."""
    return {r["precision"]: (r["tgt_tokens_per_s"], r.get("mfu", 0.0), r.get("step_ms", 0.0))
            for r in records(path) if r.get("record") == "train"}


def peaks(path):
    return {r["precision"]: r["gflops"] for r in records(path) if r.get("record") == "matmul_peak"}


def main(folder):
    print("| model | precision | trafo tgt tok/s | trafo, no CUDA graphs | plain loop tgt tok/s | ratio | trafo step ms "
          "| trafo MFU | matmul peak |")
    print("|---|---|---|---|---|---|---|---|---|")
    bench = {}
    for model in ("base", "default"):
        trafo = train_rates(os.path.join(folder, f"trafo-{model}.jsonl"))
        eager = train_rates(os.path.join(folder, f"trafo-{model}-eager.jsonl"))
        plain = train_rates(os.path.join(folder, f"plain-{model}.jsonl"))
        peak = peaks(os.path.join(folder, f"trafo-{model}.jsonl"))
        for precision in ("fp32", "bf16"):
            t, p, e = trafo.get(precision), plain.get(precision), eager.get(precision)
            bench[(model, precision)] = t[0] if t else None
            ratio = f"{t[0] / p[0]:.2f}x" if t and p else "-"
            print(f"| {model} | {precision} | {f'{t[0]:,.0f}' if t else '-'} | {f'{e[0]:,.0f}' if e else '-'} "
                  f"| {f'{p[0]:,.0f}' if p else '-'} | {ratio} "
                  f"| {f'{t[2]:.1f}' if t else '-'} | {f'{100 * t[1]:.1f}%' if t else '-'} "
                  f"| {f'{peak[precision] / 1000:.0f} TFLOP/s' if precision in peak else '-'} |")
    for model in ("base", "default"):  # --batch-tokens auto, bf16: the budget fitted to the GPU's memory
        path = os.path.join(folder, f"trafo-{model}-auto.jsonl")
        fitted = train_rates(path).get("bf16")
        setup = next((r for r in records(path) if r.get("record") == "setup"), {})
        if fitted:
            print(f"\n{model}, bf16, --batch-tokens auto ({setup.get('batch_tokens', '?')} tokens): "
                  f"{fitted[0]:,.0f} tgt tok/s, step {fitted[2]:.1f} ms, MFU {100 * fitted[1]:.1f}%")
    compiled = train_rates(os.path.join(folder, "compile-base.jsonl")).get("bf16")
    if compiled:
        t = bench.get(("base", "bf16"))
        print(f"\ntorch.compile, base, bf16: {compiled[0]:,.0f} tgt tok/s"
              + (f" (trafo {t / compiled[0]:.2f}x)" if t else ""))
    metrics = records(os.path.join(folder, "train-metrics.jsonl"))
    rates = [r["tgt_tokens_per_s"] for r in metrics if r.get("event") == "train"][1:]
    if rates:
        start = next((r for r in metrics if r.get("event") == "start"), {})
        last = [r for r in metrics if r.get("event") == "train"][-1]
        print(f"\nreal run: {len(rates) + 1} train records, median {statistics.median(rates):,.0f} tgt tok/s "
              f"(step {last['step']}; precision {start.get('precision', '?')}); "
              f"bench default model at the same batch: fp32 {bench.get(('default', 'fp32')) or 0:,.0f}, "
              f"bf16 {bench.get(('default', 'bf16')) or 0:,.0f}")
        valid = [r for r in metrics if r.get("event") == "valid"]
        if valid:
            print(f"dev BLEU by step: " + ", ".join(f"{r['step']}: {r['bleu']:.1f}" for r in valid))
    for name in ("eval.txt", "decode.txt"):
        path = os.path.join(folder, name)
        if os.path.exists(path):
            print(f"\n{name}:\n" + open(path).read().strip())


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/tmp/trafo-gpu")
