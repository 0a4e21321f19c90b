#!/usr/bin/env python3
"""What a glossary costs and gives: `trafo translate` of the same lines with and without --glossary.

    .venv/bin/python bench/glossary.py --checkpoint MODEL.pt --input SRC --glossary TERMS.tsv
                                       [--beam 5] [--rounds 3] [--threads 2]

Reports, for the whole command (model load included), the median seconds of ROUNDS runs each way;
the lines holding a source term (after a space or at the start, ending at a space or punctuation,
as trafo matches terms), each term counted once a line, whose translation holds the target term,
with and without the glossary; and how many lines without a term came out the same.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import time


def translate(args, extra):
    command = [args.trafo, "translate", "--checkpoint", args.checkpoint, "--input", args.input, "--beam",
               str(args.beam), "--threads", str(args.threads)] + extra
    start = time.monotonic()
    result = subprocess.run(command, capture_output=True, text=True)
    seconds = time.monotonic() - start
    if result.returncode != 0:
        sys.exit("failed: %s\n%s" % (" ".join(command), result.stderr))
    return seconds, result.stdout.splitlines()


def read_terms(path):
    terms = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            source, target = line.split("\t", 1)
            terms.append((source, target))
    return terms


def occurs(term, line):
    """As trafo matches a term: starting a word (after a space), ending at a space or punctuation."""
    return re.search(r"(?<!\S)" + re.escape(term) + r"(?!\w)", line) is not None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--input", required=True)
    parser.add_argument("--glossary", required=True)
    parser.add_argument("--trafo", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", "trafo"))
    parser.add_argument("--beam", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    with open(args.input, encoding="utf-8") as f:
        sources = f.read().splitlines()
    terms = read_terms(args.glossary)
    plain_times, glossed_times = [], []
    for _ in range(args.rounds):
        seconds, plain = translate(args, [])
        plain_times.append(seconds)
        seconds, glossed = translate(args, ["--glossary", args.glossary])
        glossed_times.append(seconds)
    occurrences = used_plain = used_glossed = 0
    unchanged = without_term = 0
    for i, source in enumerate(sources):
        found = [(s, t) for s, t in terms if occurs(s, source)]
        if not found:
            without_term += 1
            unchanged += plain[i] == glossed[i]
        for _, target in found:
            occurrences += 1
            used_plain += target in plain[i]
            used_glossed += target in glossed[i]
    with open("/proc/cpuinfo") as f:
        cpu = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "unknown")
    plain_s, glossed_s = statistics.median(plain_times), statistics.median(glossed_times)
    print("processor: %s; %d lines, beam %d, %d threads, medians of %d runs" %
          (cpu, len(sources), args.beam, args.threads, args.rounds))
    print("seconds: plain %.2f, with the glossary %.2f (%.2fx)" % (plain_s, glossed_s, glossed_s / plain_s))
    print("term occurrences written: %d of %d with the glossary, %d without" % (used_glossed, occurrences, used_plain))
    print("lines without a term, unchanged: %d of %d" % (unchanged, without_term))
    return 0 if unchanged == without_term else 1


if __name__ == "__main__":
    sys.exit(main())
