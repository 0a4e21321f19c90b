#!/usr/bin/env python3
"""Decoding speed of one checkpoint in trafo and, exported, in CTranslate2 (float32 and int8), side by
side on the same sentences and threads: greedy, batched, target tokens/s (pieces + eos), medians of
--rounds. trafo's time is `trafo eval`'s translate_seconds, CTranslate2's that of translate_batch,
so neither counts model loading. Both stop at --max-length pieces.

trafo runs once per --precision (fp32, bf16, auto; default "fp32,bf16"); each row names the precision
it ran in and the CPU kernel variant (eval's JSON `cpu_kernels`: avx512, avx2 or none) that served it.

Usage: bench/ctranslate2_compare.py CHECKPOINT SOURCE REFERENCE [--threads 2] [--rounds 3]
       [--precision fp32,bf16] [--kernels avx512,avx2] [--no-ctranslate2] [--ct2-batch-tokens 4096]
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile

import sentencepiece

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TRAFO = os.path.join(ROOT, "build", "trafo")


def run(command, kernels=""):
    env = dict(os.environ, TRAFO_CPU_KERNELS=kernels) if kernels else None
    return subprocess.run(command, check=True, capture_output=True, text=True, env=env).stdout


def cpu_name():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint")
    parser.add_argument("source")
    parser.add_argument("reference")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--max-length", type=int, default=256)
    parser.add_argument("--precision", default="fp32,bf16", help="trafo's precisions, comma-separated")
    parser.add_argument("--kernels", default="",
                        help="trafo's CPU kernel variants to run each precision with, comma-separated (avx512, "
                             "avx2, none: TRAFO_CPU_KERNELS); default: the best the CPU has")
    parser.add_argument("--no-ctranslate2", action="store_true", help="trafo's rows only")
    parser.add_argument("--ct2-batch-tokens", type=int, default=0,
                        help="CTranslate2 batches of this many source tokens (trafo's --batch-tokens is 4096) "
                             "instead of its 64 examples")
    args = parser.parse_args()

    work = tempfile.mkdtemp(prefix="ct2-compare-")
    rows = {}
    trafo_out = None
    variants = [(precision, kernels) for precision in args.precision.split(",")
                for kernels in (args.kernels.split(",") if args.kernels else [""])]
    for precision, kernels in variants:
        out = os.path.join(work, f"trafo-{precision}-{kernels}.txt")
        trafo_out = trafo_out or out
        seconds = []
        for _ in range(args.rounds):
            result = json.loads(run([TRAFO, "eval", "--checkpoint", args.checkpoint, "--src", args.source, "--ref",
                                     args.reference, "--threads", str(args.threads), "--beam", "1",
                                     "--precision", precision, "--max-length-a", "0",
                                     "--max-length-b", str(args.max_length), "--json", "--output", out],
                                    kernels))
            seconds.append(result["translate_seconds"])
        name = f"trafo {precision}"
        if precision == "auto":
            name += f" -> {result['precision']}"
        name += f" ({result['cpu_kernels']})"
        rows[name] = {"seconds": statistics.median(seconds), "output": out, "bleu": result["bleu"]}
    for quantization in ("float32",) if args.no_ctranslate2 else ("float32", "int8"):
        model_dir = os.path.join(work, quantization)
        run([TRAFO, "export", "--checkpoint", args.checkpoint, "--out", model_dir, "--quantization", quantization])
        if args.no_ctranslate2:
            break
        out = model_dir + ".txt"
        timings = []
        for _ in range(args.rounds):
            timings.append(json.loads(run([sys.executable, os.path.join(ROOT, "bench", "ctranslate2_decode.py"),
                                           model_dir, args.source, "--output", out, "--threads", str(args.threads),
                                           "--max-decoding-length", str(args.max_length)] +
                                          (["--max-batch-size", str(args.ct2_batch_tokens), "--batch-type", "tokens"]
                                           if args.ct2_batch_tokens else []))))
        score = json.loads(run([TRAFO, "score", "--json", "--ref", args.reference, "--hyp", out]))
        rows["CTranslate2 " + quantization] = {"seconds": statistics.median(t["seconds"] for t in timings),
                                               "output": out,
                                               "bleu": score["bleu"]}

    # Every row's rate counts the pieces (+ eos) of its own translations, as CTranslate2 counts them.
    tokenizer = sentencepiece.SentencePieceProcessor(model_file=os.path.join(work, "float32", "sentencepiece.model"))
    with open(trafo_out, encoding="utf-8") as f:
        reference_lines = f.read().splitlines()
    print(f"{cpu_name()}, {args.threads} threads, {len(reference_lines)} sentences, medians of {args.rounds}")
    print(f"{'decoder':<34} {'tgt tok/s':>10} {'vs trafo':>9} {'BLEU':>6} {'same text':>10}")
    base = None
    for name, row in rows.items():
        with open(row["output"], encoding="utf-8") as f:
            lines = f.read().splitlines()
        rate = sum(len(tokenizer.encode(line)) + 1 for line in lines) / row["seconds"]
        base = base or rate
        same = sum(a == b for a, b in zip(lines, reference_lines)) / max(1, len(reference_lines))
        print(f"{name:<34} {rate:>10.0f} {rate / base:>8.2f}x {row['bleu']:>6.2f} {same * 100:>9.1f}%")


if __name__ == "__main__":
    main()
