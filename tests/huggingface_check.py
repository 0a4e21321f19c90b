"""Checks a `trafo export --format huggingface` folder with the real transformers (PyPI, in .venv):
AutoTokenizer and AutoModelForSeq2SeqLM load it with no custom code; greedy generate() gives trafo's
translation of each line (its runs of spaces made one, as trafo prints them; the same length limit:
1.5 × source pieces + 10, then eos; one batch per source length, so no padding); and the
teacher-forced log p of each translation (its pieces and eos) is trafo's `score-pairs` score of it,
within 1e-4 relative.

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
    for length, rows in rows_of_length.items():
        pieces = length - 1  # eos last
        limit = min(int(1.5 * pieces + 10), model.config.max_position_embeddings - 1)
        batch = torch.stack([sources_of[i] for i in rows])
        with torch.no_grad():
            # At most `limit` pieces, then eos: the folder's forced_eos_token_id puts eos last, as trafo does.
            generated = model.generate(input_ids=batch, attention_mask=torch.ones_like(batch), num_beams=1,
                                       do_sample=False, max_new_tokens=limit + 1)
        for row, i in enumerate(rows):
            # trafo prints runs of spaces as one (a model may emit word-start pieces back to back).
            got[i] = re.sub(" +", " ", tokenizer.decode(generated[row], skip_special_tokens=True)).strip(" ")
    failures = []
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
