"""Checks of translated documents against their originals, with Python's zipfile and LibreOffice:
every entry of the archive still there, in its order; the entries without text byte for byte as
they were; an OpenDocument's mimetype first and stored; the text parts well-formed XML; and the
file opened by LibreOffice (converted to PDF). Used by tests/serve_check.py and, as a command, by
the C++ tests:

    document_check.py compare ORIGINAL TRANSLATED     # exit 0 when the archive holds together
    document_check.py open WORKDIR FILE...            # exit 0 when LibreOffice converts every file
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.dom.minidom
import zipfile

# The entries trafo rewrites (documents/document.cpp): the rest must come back byte for byte.
TEXT_PARTS = re.compile(r"word/(document|header\d*|footer\d*|footnotes|endnotes|comments)\.xml|"
                        r"ppt/(slides/slide|notesSlides/notesSlide)\d+\.xml|content\.xml|styles\.xml")


def compare(original, translated):
    """What is wrong with `translated` (a path or bytes) as a translation of `original`: a list."""
    problems = []
    with zipfile.ZipFile(original) as a, zipfile.ZipFile(translated) as b:
        names_a = [i.filename for i in a.infolist()]
        names_b = [i.filename for i in b.infolist()]
        if names_a != names_b:
            return ["entries differ: %r against %r" % (names_a, names_b)]
        for info_a, info_b in zip(a.infolist(), b.infolist()):
            name = info_a.filename
            data_a, data_b = a.read(name), b.read(name)
            if TEXT_PARTS.fullmatch(name):
                try:
                    xml.dom.minidom.parseString(data_b)
                except Exception as error:  # noqa: BLE001 - reported
                    problems.append("%s is not well-formed XML: %s" % (name, error))
            elif data_a != data_b:
                problems.append("%s changed" % name)
            if info_a.compress_type != info_b.compress_type and not TEXT_PARTS.fullmatch(name):
                problems.append("%s: compression %d became %d" % (name, info_a.compress_type, info_b.compress_type))
        if "mimetype" in names_a and (names_b[0] != "mimetype" or b.infolist()[0].compress_type != zipfile.ZIP_STORED):
            problems.append("the mimetype entry is not first and stored")
    return problems


def text_of(path):
    """The text of a document's text parts, tags removed, whitespace collapsed."""
    with zipfile.ZipFile(path) as z:
        parts = [n for n in z.namelist() if TEXT_PARTS.fullmatch(n)]
        text = " ".join(re.sub(r"<[^>]+>", " ", z.read(n).decode("utf-8")) for n in parts)
    return " ".join(text.split())


def open_in_libreoffice(paths, workdir):
    """Converts every file to PDF with LibreOffice (one run); returns the files it could not convert."""
    out = tempfile.mkdtemp(prefix="pdf-", dir=workdir)
    # Copies named by their place, so that x.docx and x.odt do not both make x.pdf.
    copies = []
    for i, path in enumerate(paths):
        copies.append(os.path.join(out, "%d%s" % (i, os.path.splitext(path)[1])))
        shutil.copyfile(path, copies[-1])
    with tempfile.TemporaryDirectory(dir=workdir) as profile:
        result = subprocess.run(["soffice", "-env:UserInstallation=file://" + profile, "--headless", "--convert-to", "pdf",
                                 "--outdir", out] + copies, capture_output=True, text=True, timeout=600)
    failed = []
    for i, path in enumerate(paths):
        pdf = os.path.join(out, "%d.pdf" % i)
        if not os.path.exists(pdf) or os.path.getsize(pdf) < 1000:
            failed.append("%s (soffice: %s %s)" % (path, result.stdout.strip(), result.stderr.strip()))
    return failed


def main(argv):
    if len(argv) == 3 and argv[0] == "compare":
        problems = compare(argv[1], argv[2])
    elif len(argv) >= 3 and argv[0] == "open":
        problems = open_in_libreoffice(argv[2:], argv[1])
    else:
        print(__doc__)
        return 2
    for problem in problems:
        print(problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
