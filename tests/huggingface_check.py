"""Checks a `trafo export --format huggingface` folder with the real transformers (PyPI, in .venv):
AutoTokenizer and AutoModelForSeq2SeqLM load it with no custom code; greedy generate() gives trafo's
translation of each line (its runs of spaces made one, as trafo prints them; the same length limit:
1.5 × source pieces + 10, then eos; one batch per source length, so no padding); the
teacher-forced log p of each translation (its pieces and eos) is trafo's `score-pairs` score of it,
within 1e-4 relative; and every user's recipe, batch_decode(generate(**tokenizer(texts,
padding=True)), skip_special_tokens=True) with the folder's own generation config, over sources of
different lengths in one padded batch, prints trafo's translations: no "<s>" or other special piece
in them (the decoder's start, eos and pad are special), each line trafo's, or where trafo stopped at
its length limit, trafo's line then more.

    huggingface_check.py FOLDER SOURCES TRAFO_TRANSLATIONS TRAFO_SCORES [FOLDER SOURCES ...]
Prints "ok" and exits 0, or prints each mismatch (with its folder) and exits 1.
"""

import os
import re
import sys
import warnings

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a local folder only: nothing is fetched
import torch  # noqa: E402
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer  # noqa: E402


def as_trafo_prints(text):
    """`text` as trafo prints a translation: runs of spaces made one (a model may emit word-start pieces
    back to back), none at either end."""
    return re.sub(" +", " ", text).strip(" ")


def recipe(tokenizer, model, lines, expected, cut):
    """The mismatches of every user's recipe against trafo's translations `expected`, on up to 8 of
    `lines`, each of another length (so the batch is padded). `cut`: the lines trafo stopped at its
    length limit, which the recipe (the folder's max_length) may take further."""
    rows, lengths = [], set()
    for i, line in enumerate(lines):
        length = len(tokenizer(line)["input_ids"])
        if length not in lengths and len(rows) < 8:
            rows.append(i)
            lengths.add(length)
    failures = []
    generation = model.generation_config
    for name in ("decoder_start_token_id", "eos_token_id", "pad_token_id"):
        # skip_special_tokens drops a special id, or an id whose piece is a special token's.
        token = getattr(generation, name)
        piece = tokenizer.convert_ids_to_tokens(token)
        if token not in tokenizer.all_special_ids and piece not in tokenizer.all_special_tokens:
            failures.append(f"{name} {token} ({piece!r}) is not a special token of the tokenizer: "
                            "skip_special_tokens keeps it")
    texts = [lines[i] for i in rows]
    with torch.no_grad():
        decoded = tokenizer.batch_decode(model.generate(**tokenizer(texts, return_tensors="pt", padding=True)),
                                         skip_special_tokens=True)
    for i, text in zip(rows, decoded):
        got, want = as_trafo_prints(text), expected[i]
        if got.startswith("<s>") or (got != want and not (i in cut and got.startswith(want))):
            failures.append(f"recipe line {i + 1}: transformers {got!r}, trafo {want!r}")
    return failures


def check(folder, sources, translations, scores):
    """The mismatches of one exported folder against trafo's output."""
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForSeq2SeqLM.from_pretrained(folder).eval()
    lines = open(sources, encoding="utf-8").read().splitlines()
    expected = open(translations, encoding="utf-8").read().splitlines()
    expected_scores = [float(line.split()[0]) for line in open(scores, encoding="utf-8").read().splitlines()]
    assert len(lines) == len(expected) == len(expected_scores), "line counts differ"
    # Greedy generate() runs once per source length: a batch of sources of one length needs no padding,
    # and every row has the same length limit.
    sources_of = [tokenizer(line, return_tensors="pt")["input_ids"][0] for line in lines]
    rows_of_length = {}
    for i, ids in enumerate(sources_of):
        rows_of_length.setdefault(len(ids), []).append(i)
    got = [None] * len(lines)
    cut = set()  # the lines trafo stopped at its length limit
    for length, rows in rows_of_length.items():
        pieces = length - 1  # eos last
        limit = min(int(1.5 * pieces + 10), model.config.max_position_embeddings - 1)
        batch = torch.stack([sources_of[i] for i in rows])
        with torch.no_grad():
            # At most `limit` pieces, then eos: the folder's forced_eos_token_id puts eos last, as trafo does.
            generated = model.generate(input_ids=batch, attention_mask=torch.ones_like(batch), num_beams=1,
                                       do_sample=False, max_new_tokens=limit + 1)
        for row, i in enumerate(rows):
            got[i] = as_trafo_prints(tokenizer.decode(generated[row], skip_special_tokens=True))
            # The start, `limit` pieces, then the forced eos.
            if (generated[row] == model.generation_config.eos_token_id).nonzero()[0].item() == limit + 1:
                cut.add(i)
    failures = [f"{folder} {failure}" for failure in recipe(tokenizer, model, lines, expected, cut)]
    for i, (want, want_score) in enumerate(zip(expected, expected_scores)):
        with torch.no_grad():
            labels = tokenizer(text_target=want, return_tensors="pt")["input_ids"]
            logits = model(input_ids=sources_of[i].unsqueeze(0), labels=labels).logits
            score = torch.log_softmax(logits.double(), -1).gather(-1, labels.unsqueeze(-1)).sum().item()
        if got[i] != want:
            failures.append(f"{folder} line {i + 1}: transformers {got[i]!r}, trafo {want!r}")
        if abs(score - want_score) > 1e-4 * max(1.0, abs(want_score)):
            failures.append(f"{folder} line {i + 1}: transformers log p {score:.6f}, trafo {want_score:.6f}")
    return failures


def main():
    warnings.filterwarnings("ignore")  # e.g. "Recommended: pip install sacremoses"
    torch.set_num_threads(1)
    arguments = sys.argv[1:]
    assert arguments and len(arguments) % 4 == 0, __doc__
    failures = []
    for at in range(0, len(arguments), 4):
        failures += check(*arguments[at:at + 4])
    for failure in failures:
        print(failure)
    print("ok" if not failures else f"{len(failures)} mismatches")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
