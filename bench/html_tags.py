#!/usr/bin/env python3
"""How well `trafo translate --format html` places inline tags, on toy sentences whose right place is
known: the toy lexicon links each content word to its German word (`trafo toy-corpus --alignments`).

    .venv/bin/python bench/html_tags.py --checkpoint MODEL.pt [--sentences 500] [--work DIR]

Each of the toy test set's first N sentences becomes a <p> with 1-3 inline tags (b, i, em, a, span)
around a linked word or two adjacent linked words. The page is translated once with --format html,
and the sentences once as plain lines. Reported:
- well-formed: Python's HTML parser finds the output well-nested, with every tag of the page once;
- placed: of the tags in sentences translated exactly as the reference (so the lexicon's links hold
  for the translation), the share that wraps exactly the German words linked to what it wrapped;
- the same for Argos Translate, LibreTranslate's engine, on trafo's Argos export of the model:
  PyPI argostranslate's tag handling (argostranslate.tags.translate_tags, which LibreTranslate calls;
  it translates each text node alone), with the share of sentences whose text equals the reference.
"""
import argparse
import collections
import html
import html.parser
import os
import random
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
import html_check  # noqa: E402

TAGS = [("b", ""), ("i", ""), ("em", ""), ("a", ' href="#x"'), ("span", ' class="c"')]


def run(args, stdin=None):
    result = subprocess.run(args, input=stdin, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit("failed: %s\n%s" % (" ".join(args), result.stderr))
    return result.stdout


def links_of(line):
    pairs = []
    for item in line.split():
        s, t = item.split("-")
        pairs.append((int(s), int(t)))
    return pairs


def make_page(words, links, rng):
    """The sentence with 1-3 tags around linked words: (html, [(tag id, source words)])."""
    linked = sorted({s for s, _ in links})
    spans = []
    wanted = rng.randint(1, 3)
    for s in rng.sample(linked, len(linked)):
        width = 2 if s + 1 in linked and rng.random() < 0.3 else 1
        span = (s, s + width)
        if all(span[1] <= a or span[0] >= b for a, b in spans):
            spans.append(span)
        if len(spans) == wanted:
            break
    spans.sort()
    out, tags, at = [], [], 0
    for k, (a, b) in enumerate(spans):
        name, attributes = TAGS[rng.randrange(len(TAGS))]
        out.extend(html.escape(w) for w in words[at:a])
        out.append('<%s data-k="%d"%s>%s</%s>' % (name, k, attributes, html.escape(" ".join(words[a:b])), name))
        tags.append((k, set(range(a, b))))
        at = b
    out.extend(html.escape(w) for w in words[at:])
    return "<p>" + " ".join(out) + "</p>", tags


class Wrapped(html.parser.HTMLParser):
    """For each <p>: its words, and the word indices inside each tag with data-k."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.paragraphs = []
        self.open = []
        self.glued = False

    def handle_starttag(self, tag, attrs):
        if tag == "p":
            self.paragraphs.append({"words": [], "tags": collections.defaultdict(set)})
            self.glued = False
            return
        self.open.append(dict(attrs).get("data-k"))

    def handle_endtag(self, tag):
        if tag != "p" and self.open:
            self.open.pop()

    def handle_data(self, data):
        if not self.paragraphs:
            return
        p = self.paragraphs[-1]
        pieces = data.split()
        for n, piece in enumerate(pieces):
            if n == 0 and self.glued and not data[:1].isspace() and p["words"]:
                p["words"][-1] += piece
            else:
                p["words"].append(piece)
            for k in self.open:
                if k is not None:
                    p["tags"][int(k)].add(len(p["words"]) - 1)
        self.glued = bool(pieces) and not data[-1:].isspace()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--trafo", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", "trafo"))
    parser.add_argument("--sentences", type=int, default=500)
    parser.add_argument("--work", default=None)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--threads", default="2")
    parser.add_argument("--show", type=int, default=0, help="print this many misplaced tags")
    args = parser.parse_args()
    work = args.work or tempfile.mkdtemp(prefix="html-tags-")
    toy = os.path.join(work, "toy")
    run([args.trafo, "toy-corpus", "--out", toy, "--train", "0", "--dev", "0", "--test", str(args.sentences),
         "--alignments", "--force"])
    read = lambda name: open(os.path.join(toy, name), encoding="utf-8").read().splitlines()
    sources, references, gold = read("test.en"), read("test.de"), [links_of(l) for l in read("test.align")]
    rng = random.Random(args.seed)
    pages = []
    for source, links in zip(sources, gold):
        pages.append(make_page(source.split(), links, rng) if links else ("<p>%s</p>" % html.escape(source), []))
    document = "<!DOCTYPE html>\n<html><body>\n" + "\n".join(p for p, _ in pages) + "\n</body></html>\n"
    common = ["--checkpoint", args.checkpoint, "--threads", args.threads]
    translated = run([args.trafo, "translate", "--format", "html"] + common, document)
    plain = run([args.trafo, "translate"] + common, "".join(s + "\n" for s in sources)).splitlines()

    problems = html_check.check(document, translated, plain)
    exact = [plain[i] == references[i] for i in range(len(sources))]
    out = Wrapped()
    out.feed(translated)
    placed = total = 0
    for i, (_, tags) in enumerate(pages):
        if not exact[i]:
            continue
        target_of = collections.defaultdict(set)
        for s, t in gold[i]:
            target_of[s].add(t)
        for k, source_words in tags:
            want = set().union(*(target_of[s] for s in source_words))
            total += 1
            got = out.paragraphs[i]["tags"].get(k, set())
            placed += got == want
            if got != want and args.show > 0:
                args.show -= 1
                words = out.paragraphs[i]["words"]
                print("misplaced: %s\n  -> %s\n  wanted %s, got %s" % (pages[i][0], plain[i],
                      [words[t] for t in sorted(want) if t < len(words)], [words[t] for t in sorted(got)]))

    # Argos/LibreTranslate: PyPI argostranslate on trafo's Argos export of the same model.
    argos_html = argos_pages(args, work, [page for page, _ in pages])
    argos_out = Wrapped()
    argos_out.feed("\n".join(argos_html))
    argos_placed = argos_exact = 0
    for i, (_, tags) in enumerate(pages):
        words = argos_out.paragraphs[i]["words"]
        argos_exact += " ".join(words) == references[i]
        if not exact[i] or " ".join(words) != references[i]:
            continue  # a tag in another translation is not placed
        target_of = collections.defaultdict(set)
        for s, t in gold[i]:
            target_of[s].add(t)
        for k, source_words in tags:
            argos_placed += argos_out.paragraphs[i]["tags"].get(k, set()) == set().union(*(target_of[s] for s in source_words))

    n = len(sources)
    print("processor: %s" % processor())
    print("sentences: %d, tags: %d; translated exactly as the reference: %d" %
          (n, sum(len(t) for _, t in pages), sum(exact)))
    print("well-formed, every tag once, runs = plain translations: %s" % ("yes" if not problems else "NO: " + "; ".join(problems)))
    print("aligned placement (--format html): %d of %d tags placed exactly (%.1f%%)" % (placed, total, 100.0 * placed / max(total, 1)))
    print("argostranslate (translate_tags, per text node): %d of %d tags placed exactly (%.1f%%); sentences equal to "
          "the reference: %d of %d (against %d of %d plain)" % (argos_placed, total, 100.0 * argos_placed / max(total, 1),
                                                               argos_exact, n, sum(exact), n))
    return 0 if not problems else 1


class ArgosTree(html.parser.HTMLParser):
    """A <p> as argostranslate's tag tree: its text, and a Tag holding the text of each inline tag."""

    def __init__(self, tags):
        super().__init__(convert_charrefs=True)
        self.root = tags.Tag([])
        self.tags = tags
        self.open = [self.root]

    def handle_starttag(self, tag, attrs):
        if tag != "p":
            child = self.tags.Tag([])
            child.html = (tag, attrs)
            self.open[-1].children.append(child)
            self.open.append(child)

    def handle_endtag(self, tag):
        if tag != "p":
            self.open.pop()

    def handle_data(self, data):
        self.open[-1].children.append(data)


def write_tree(node):
    if isinstance(node, str):
        return html.escape(node, quote=False)
    inner = "".join(write_tree(child) for child in node.children)
    if not hasattr(node, "html"):
        return inner
    name, attrs = node.html
    return "<%s%s>%s</%s>" % (name, "".join(' %s="%s"' % (k, html.escape(v)) for k, v in attrs), inner, name)


def argos_pages(args, work, pages):
    """Each page as LibreTranslate translates HTML with Argos: its translatehtml builds this tree with
    BeautifulSoup and calls argostranslate.tags.translate_tags. That would translate a sentence whole
    and put each tag where its own text's translation occurs ("tag injection") for a tree of depth 2,
    but argostranslate's depth() counts every tree as 0 (1.11.0), so each text node is translated
    alone. Greedy, float32, as trafo translates."""
    argos = os.path.join(work, "argos")
    package = os.path.join(argos, "model.argosmodel")
    os.makedirs(argos, exist_ok=True)
    run([args.trafo, "export", "--checkpoint", args.checkpoint, "--format", "argos", "--out", package, "--force"])
    for name in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME"):
        os.environ[name] = os.path.join(argos, name.lower())
    os.environ.update({"ARGOS_PACKAGES_DIR": os.path.join(argos, "packages"), "ARGOS_BEAM_SIZE": "1",
                       "ARGOS_COMPUTE_TYPE": "default", "ARGOS_INTRA_THREADS": args.threads, "ARGOS_DEVICE_TYPE": "cpu"})
    import argostranslate.package
    import argostranslate.sbd
    import argostranslate.tags
    import argostranslate.translate
    # Argos splits sentences with a model it downloads on first use; offline, a page is one sentence.
    argostranslate.sbd.MiniSBDSentencizer.split_sentences = lambda self, text: [text]
    argostranslate.package.install_from_path(package)
    installed = argostranslate.package.get_installed_packages()[0]
    translation = argostranslate.translate.get_translation_from_codes(installed.from_code, installed.to_code)
    out = []
    for page in pages:
        tree = ArgosTree(argostranslate.tags)
        tree.feed(page)
        out.append("<p>" + write_tree(argostranslate.tags.translate_tags(translation, tree.root)) + "</p>")
    return out


def processor():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


if __name__ == "__main__":
    sys.exit(main())
