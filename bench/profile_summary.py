#!/usr/bin/env python3
"""Where a profiled training step's time goes: self time per op of a Chrome trace.

    bench/profile_summary.py TRACE.json [--top N] [--steps N] [--kernels]

TRACE is what `trafo bench --profile PREFIX` writes (PREFIX.fp32.json, PREFIX.bf16.json), or any
Chrome trace of torch.profiler. Self time = an op's duration less the ops it called on the same
thread; per step = total / --steps (default 3, what trafo bench profiles). --kernels sums the GPU's
side instead: the time of each CUDA kernel (and copy and fill) by name, and the GPU's idle share of
the span from the first kernel to the last.
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


def kernel_times(events):
    """({name: [microseconds, calls]}, busy microseconds, span microseconds) over the GPU events."""
    totals = collections.defaultdict(lambda: [0.0, 0])
    spans = []
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"):
            totals[e["name"]][0] += float(e["dur"])
            totals[e["name"]][1] += 1
            spans.append((float(e["ts"]), float(e["ts"]) + float(e["dur"])))
    spans.sort()
    busy, end = 0.0, float("-inf")
    for start, stop in spans:  # the union of the kernels' intervals
        if stop > end:
            busy += stop - max(start, end)
            end = stop
    span = spans[-1][1] - spans[0][0] if spans else 0.0
    return totals, busy, span


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("trace")
    p.add_argument("--top", type=int, default=25)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--kernels", action="store_true", help="GPU kernel time by name instead of CPU op self time")
    a = p.parse_args()
    with open(a.trace) as f:
        trace = json.load(f)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    if a.kernels:
        totals, busy, span = kernel_times(events)
        print(f"{a.trace}: GPU busy {busy / 1e3 / a.steps:.2f} ms per step of a {span / 1e3 / a.steps:.2f} ms span "
              f"({100 * (1 - busy / max(span, 1e-9)):.1f}% idle)")
        print(f"{'kernel':<90} {'ms/step':>9} {'share':>7} {'calls/step':>11}")
        for name, (t, calls) in sorted(totals.items(), key=lambda kv: -kv[1][0])[: a.top]:
            print(f"{name[:90]:<90} {t / 1e3 / a.steps:>9.3f} {100 * t / max(busy, 1e-9):>6.1f}% {calls / a.steps:>11.0f}")
        return
    totals = self_times(events)
    whole = sum(t for t, _ in totals.values())
    print(f"{a.trace}: {whole / 1e3 / a.steps:.1f} ms of ops per step (self time, summed over threads' op spans)")
    print(f"{'op':<48} {'ms/step':>9} {'share':>7} {'calls/step':>11}")
    for name, (t, calls) in sorted(totals.items(), key=lambda kv: -kv[1][0])[: a.top]:
        print(f"{name[:48]:<48} {t / 1e3 / a.steps:>9.2f} {100 * t / whole:>6.1f}% {calls / a.steps:>11.0f}")


if __name__ == "__main__":
    main()
