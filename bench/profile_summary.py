#!/usr/bin/env python3
"""Where a profiled training step's time goes: self time per op of a Chrome trace.

    bench/profile_summary.py TRACE.json [--top N] [--steps N]

TRACE is what `trafo bench --profile PREFIX` writes (PREFIX.fp32.json, PREFIX.bf16.json), or any
Chrome trace of torch.profiler. Self time = an op's duration less the ops it called on the same
thread; per step = total / --steps (default 3, what trafo bench profiles).
"""
import argparse
import collections
import json


def self_times(events):
    """{name: [self microseconds, calls]} over the complete ("X") CPU op events."""
    by_thread = collections.defaultdict(list)
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in ("cpu_op", "user_annotation", "Operator"):
            by_thread[e.get("tid")].append(e)
    totals = collections.defaultdict(lambda: [0.0, 0])
    for spans in by_thread.values():
        spans.sort(key=lambda e: (float(e["ts"]), -float(e["dur"])))
        stack = []  # [end, event, child time]
        def close(until):
            while stack and stack[-1][0] <= until:
                end, e, children = stack.pop()
                totals[e["name"]][0] += float(e["dur"]) - children
                totals[e["name"]][1] += 1
                if stack:
                    stack[-1][2] += float(e["dur"])
        for e in spans:
            start = float(e["ts"])
            close(start)
            stack.append([start + float(e["dur"]), e, 0.0])
        close(float("inf"))
    return totals


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("trace")
    p.add_argument("--top", type=int, default=25)
    p.add_argument("--steps", type=int, default=3)
    a = p.parse_args()
    with open(a.trace) as f:
        trace = json.load(f)
    totals = self_times(trace["traceEvents"] if isinstance(trace, dict) else trace)
    whole = sum(t for t, _ in totals.values())
    print(f"{a.trace}: {whole / 1e3 / a.steps:.1f} ms of ops per step (self time, summed over threads' op spans)")
    print(f"{'op':<48} {'ms/step':>9} {'share':>7} {'calls/step':>11}")
    for name, (t, calls) in sorted(totals.items(), key=lambda kv: -kv[1][0])[: a.top]:
        print(f"{name[:48]:<48} {t / 1e3 / a.steps:>9.2f} {100 * t / whole:>6.1f}% {calls / a.steps:>11.0f}")


if __name__ == "__main__":
    main()
