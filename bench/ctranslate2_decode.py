#!/usr/bin/env python3
"""Translates a source file with a model folder written by `trafo export --format ctranslate2`,
through the PyPI ctranslate2 runtime, the way a user deploying the model would.

Greedy (beam 1) by default, as `trafo translate --beam 1`. Writes the detokenized translations
(one a line) to --output and prints one JSON line: lines, target tokens (pieces + eos, as trafo
counts them), seconds of translate_batch alone, target tokens/s.

Usage: bench/ctranslate2_decode.py MODEL_DIR SOURCE --output OUT [--compute-type default|int8|...]
       [--threads N] [--beam N] [--max-batch-size N] [--batch-type examples|tokens]
"""
import argparse
import json
import os
import sys
import time

import ctranslate2
import sentencepiece


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model_dir")
    parser.add_argument("source")
    parser.add_argument("--output", required=True)
    parser.add_argument("--compute-type", default="default")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--beam", type=int, default=1)
    parser.add_argument("--max-batch-size", type=int, default=64)
    parser.add_argument("--batch-type", choices=("examples", "tokens"), default="examples")
    parser.add_argument("--max-decoding-length", type=int, default=256)
    parser.add_argument("--trafo-limit", action="store_true",
                        help="each line's length limit as trafo's: 1.5 x its source pieces + 10 (a line a batch)")
    args = parser.parse_args()

    # trafo's own vocabulary: one SentencePiece model; an imported MarianMT one: a model per side, its
    # target pieces joined as MarianMT's tokenizer joins them (a leftover word-start mark is a space).
    marian = os.path.exists(os.path.join(args.model_dir, "source.spm"))
    tokenizer = sentencepiece.SentencePieceProcessor(
        model_file=os.path.join(args.model_dir, "source.spm" if marian else "sentencepiece.model"))
    detokenizer = sentencepiece.SentencePieceProcessor(model_file=os.path.join(args.model_dir, "target.spm")) \
        if marian else tokenizer
    translator = ctranslate2.Translator(args.model_dir, device="cpu", compute_type=args.compute_type,
                                        intra_threads=args.threads, inter_threads=1)
    with open(args.source, encoding="utf-8") as f:
        lines = [line.rstrip("\n") for line in f]
    def pieces_of(line):  # MarianMT's tokenizer keeps a leading language code (>>deu<<) whole
        end = line.find("<<") if marian and line.startswith(">>") else -1
        code, line = ([line[:end + 2]], line[end + 2:]) if end >= 0 else ([], line)
        return code + tokenizer.encode(line, out_type=str)

    batch = [pieces_of(line) for line in lines]
    start = time.perf_counter()
    if args.trafo_limit:
        results = [translator.translate_batch([pieces], beam_size=args.beam,
                                              max_decoding_length=min(args.max_decoding_length,
                                                                      int(1.5 * len(pieces) + 10)))[0]
                   for pieces in batch]
    else:
        results = translator.translate_batch(batch, beam_size=args.beam, max_batch_size=args.max_batch_size,
                                             batch_type=args.batch_type, max_decoding_length=args.max_decoding_length)
    seconds = time.perf_counter() - start
    hypotheses = [result.hypotheses[0] for result in results]
    with open(args.output, "w", encoding="utf-8") as f:
        for pieces in hypotheses:
            text = detokenizer.decode_pieces(pieces)
            f.write((text.replace("\u2581", " ").strip(" ") if marian else text) + "\n")
    tokens = sum(len(pieces) + 1 for pieces in hypotheses)
    print(json.dumps({"lines": len(lines), "target_tokens": tokens, "seconds": round(seconds, 4),
                      "target_tokens_per_s": round(tokens / seconds, 1),
                      "compute_type": translator.compute_type, "threads": args.threads}))


if __name__ == "__main__":
    sys.exit(main())
