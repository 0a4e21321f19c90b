"""Checks a translated HTML page against its source with Python's own HTML parser (html.parser):
the output is well-formed (every end tag closes the element open last, nothing left open), holds
every tag of the source exactly once with its attributes, keeps what is not translated as it was,
and each run of text reads as the plain translation of that run.

    html_check.py SOURCE.html OUTPUT.html [PLAIN]

PLAIN, when given, has one line per run of the source, in document order: what `trafo translate`
prints for the run's text as a plain line. Prints "ok" and exits 0, or says what is wrong and exits 1.
"""
import collections
import html.parser
import sys

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "keygen", "link", "meta", "param", "source",
        "track", "wbr"}
INLINE = {"a", "abbr", "b", "bdi", "bdo", "big", "cite", "data", "del", "dfn", "em", "font", "i", "ins", "kbd", "label",
          "mark", "q", "s", "samp", "small", "span", "strike", "strong", "sub", "sup", "time", "tt", "u", "var",
          "br", "img", "input", "wbr"}
KEPT = {"script", "style", "code", "pre", "textarea", "svg", "math"}
KEPT_INLINE = KEPT - {"pre"}  # stand in their run as one point


def kept(tag, attrs):
    attrs = dict(attrs)
    return tag in KEPT or attrs.get("translate") == "no" or "notranslate" in (attrs.get("class") or "").split()


class Page(html.parser.HTMLParser):
    """Tags, nesting errors, the text of each block (runs) and the text of kept elements."""

    def __init__(self, text):
        super().__init__(convert_charrefs=True)
        self.tags = collections.Counter()
        self.errors = []
        self.open = []      # (tag, kept)
        self.runs = []      # the text of each block's inline content, whitespace collapsed, in document order
        self.kept_text = []
        self.text = ""
        self.feed(text)
        self.close()
        self.end_run()
        if self.open:
            self.errors.append("left open: " + ", ".join(t for t, _ in self.open))

    def in_kept(self):
        return any(k for _, k in self.open)

    def end_run(self):
        if self.text.split():
            self.runs.append(" ".join(self.text.split()))
        self.text = ""

    def handle_starttag(self, tag, attrs):
        # A boolean attribute reads the same bare or with its own name as value (disabled="disabled").
        self.tags[(tag, tuple(sorted((k, "" if v is None or v == k else v) for k, v in attrs)))] += 1
        if tag == "br" and not self.in_kept():
            self.text += " "  # a line break parts words
        if tag not in INLINE and tag not in KEPT_INLINE and not self.in_kept():
            self.end_run()
        if tag in VOID:
            return
        self.open.append((tag, kept(tag, attrs) or self.in_kept()))
        if self.open[-1][1] and not (len(self.open) > 1 and self.open[-2][1]):
            self.kept_text.append("")

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag not in VOID:
            self.handle_endtag(tag)

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        if not self.open or self.open[-1][0] != tag:
            self.errors.append("</%s> closes %s" % (tag, self.open[-1][0] if self.open else "nothing"))
            return
        was_kept = self.open.pop()[1]
        if tag not in INLINE and tag not in KEPT_INLINE and not (was_kept and self.in_kept()):
            self.end_run()

    def handle_data(self, data):
        if self.in_kept():
            self.kept_text[-1] += data
        else:
            self.text += data

    def handle_comment(self, data):
        pass


def check(source_text, output_text, plain=None):
    """The problems found, as a list of lines (empty: none)."""
    source, output = Page(source_text), Page(output_text)
    problems = ["source: " + e for e in source.errors] + ["output: " + e for e in output.errors]
    if source.tags != output.tags:
        problems.append("tags differ: only in the source %s, only in the output %s" %
                        (dict(source.tags - output.tags), dict(output.tags - source.tags)))
    if source.kept_text != output.kept_text:
        problems.append("kept text differs: %r against %r" % (source.kept_text, output.kept_text))
    if plain is not None:
        wanted = [" ".join(p.split()) for p in plain if p.split()]
        if output.runs != wanted:
            problems.append("runs %r, plain translations %r" % (output.runs, wanted))
    return problems


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        source = f.read()
    with open(sys.argv[2], encoding="utf-8") as f:
        output = f.read()
    plain = None
    if len(sys.argv) > 3:
        with open(sys.argv[3], encoding="utf-8") as f:
            plain = f.read().splitlines()
    problems = check(source, output, plain)
    if problems:
        print("\n".join(problems))
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
