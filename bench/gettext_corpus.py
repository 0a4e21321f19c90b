"""A real parallel corpus from the gettext catalogues installed on this machine.

Every program translated into LANG ships /usr/share/locale/LANG/LC_MESSAGES/*.mo: its English
messages (msgid) with their translations (msgstr). This reads them all, keeps each English message
once (the first catalogue's translation, catalogues in name order), joins white space, leaves out
plural forms, untranslated messages (translation equal to the message but for case: French
catalogues write the names of thousands of languages lowercased, `Tsotso` -> `tsotso`, and pairs
that copy their source teach a model to copy) and pairs of more than MAX_WORDS words on a side,
shuffles with a fixed seed and writes OUT/{train,dev,test}.{en,LANG} (dev and test 1,000 pairs
each). What it makes depends on the packages installed: it prints the
counts and a hash of the files, to say which corpus a figure comes from.

    .venv/bin/python bench/gettext_corpus.py --lang de --out /tmp/gettext-ende

With --langs fr,es,it it makes one multilingual corpus instead: dev and test sets of English
messages that every language translates (multi-way: OUT/{dev,test}.en with OUT/{dev,test}.fr, .es,
.it, line by line), and for each language the training pairs OUT/train.en-LANG.{en,LANG}, which
hold none of the held-out English messages (a multilingual model's leak check finds none).
"""

import argparse
import gettext
import glob
import hashlib
import os
import random

MAX_WORDS = 80
HELD_OUT = 1000


def pairs_of(lang):
    pairs = {}
    for path in sorted(glob.glob(f"/usr/share/locale/{lang}/LC_MESSAGES/*.mo")):
        try:
            with open(path, "rb") as f:
                catalogue = gettext.GNUTranslations(f)
        except Exception:  # noqa: BLE001 (gettext raises several kinds on a header it cannot read)
            continue  # a damaged catalogue, or one with a malformed header
        for message, translation in catalogue._catalog.items():
            if isinstance(message, tuple) or not message or not translation:
                continue  # plural forms, and the catalogue's header (the empty message)
            message = " ".join(message.split("\x04")[-1].split())  # context ("ctx\x04msg") left out
            translation = " ".join(translation.split())
            if not message or not translation or message.casefold() == translation.casefold() or message in pairs:
                continue
            if len(message.split()) > MAX_WORDS or len(translation.split()) > MAX_WORDS:
                continue
            pairs[message] = translation
    return sorted(pairs.items())


def write(path, lines, digest):
    text = "".join(line + "\n" for line in lines)
    digest.update(text.encode())
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def multiway(langs, out, seed):
    tables = {lang: dict(pairs_of(lang)) for lang in langs}
    common = sorted(set.intersection(*(set(table) for table in tables.values())))
    if len(common) < 2 * HELD_OUT:
        raise SystemExit(f"gettext_corpus.py: only {len(common)} messages translated into all of {', '.join(langs)}")
    random.Random(seed).shuffle(common)
    held = {"dev": common[:HELD_OUT], "test": common[HELD_OUT:2 * HELD_OUT]}
    held_out = set(common[:2 * HELD_OUT])
    os.makedirs(out, exist_ok=True)
    digest = hashlib.sha256()
    for name, messages in held.items():
        write(os.path.join(out, f"{name}.en"), messages, digest)
        for lang in langs:
            write(os.path.join(out, f"{name}.{lang}"), [tables[lang][m] for m in messages], digest)
    counts = []
    for lang in langs:
        train = [(m, t) for m, t in sorted(tables[lang].items()) if m not in held_out]
        random.Random(seed).shuffle(train)
        write(os.path.join(out, f"train.en-{lang}.en"), [m for m, _ in train], digest)
        write(os.path.join(out, f"train.en-{lang}.{lang}"), [t for _, t in train], digest)
        counts.append(f"en-{lang} {len(train)}")
    print(f"{out}: train {', '.join(counts)} pairs; dev and test {HELD_OUT} English messages in all of "
          f"{', '.join(langs)} ({len(common)} in common); sha256 {digest.hexdigest()[:16]}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lang", help="the target language's locale folder, e.g. de")
    parser.add_argument("--langs", help="several, comma-separated (fr,es,it): one multilingual corpus")
    parser.add_argument("--out", required=True)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    if bool(args.lang) == bool(args.langs):
        parser.error("give --lang or --langs")
    if args.langs:
        multiway(args.langs.split(","), args.out, args.seed)
        return
    pairs = pairs_of(args.lang)
    if len(pairs) < 3 * HELD_OUT:
        raise SystemExit(f"gettext_corpus.py: only {len(pairs)} pairs for {args.lang}")
    random.Random(args.seed).shuffle(pairs)
    parts = {"dev": pairs[:HELD_OUT], "test": pairs[HELD_OUT:2 * HELD_OUT], "train": pairs[2 * HELD_OUT:]}
    os.makedirs(args.out, exist_ok=True)
    digest = hashlib.sha256()
    for name, part in parts.items():
        for side, lang in ((0, "en"), (1, args.lang)):
            text = "".join(pair[side] + "\n" for pair in part)
            digest.update(text.encode())
            with open(os.path.join(args.out, f"{name}.{lang}"), "w", encoding="utf-8") as f:
                f.write(text)
    print(f"{args.out}: en-{args.lang}, train {len(parts['train'])}, dev {len(parts['dev'])}, "
          f"test {len(parts['test'])} pairs; sha256 {digest.hexdigest()[:16]}")


if __name__ == "__main__":
    main()
