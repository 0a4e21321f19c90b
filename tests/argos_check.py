"""Installs a trafo .argosmodel with PyPI's argostranslate and translates with it (tests/argos_export_test.cpp).

    argos_check.py PACKAGE SOURCES EXPECTED WORKDIR

Everything argos writes goes under WORKDIR. Decoding as `trafo translate` does: greedy
(ARGOS_BEAM_SIZE=1), float32 (ARGOS_COMPUTE_TYPE=default; argos's auto picks int8 on some CPUs).
Argos splits text into sentences with a model it downloads on first use; offline, each line is
one sentence. Prints "ok" when every line equals EXPECTED's (runs of spaces squeezed: argos keeps
the double space that two word pieces make, trafo prints one).
"""

import json
import os
import re
import sys
import zipfile

package, sources, expected, work = sys.argv[1:5]
for name in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME"):
    os.environ[name] = os.path.join(work, name.lower())
os.environ.update({"ARGOS_PACKAGES_DIR": os.path.join(work, "packages"), "ARGOS_BEAM_SIZE": "1",
                   "ARGOS_COMPUTE_TYPE": "default", "ARGOS_INTRA_THREADS": "1", "ARGOS_DEVICE_TYPE": "cpu"})

with zipfile.ZipFile(package) as archive:
    assert archive.testzip() is None, "a damaged member"
    names = archive.namelist()
    top = {name.split("/")[0] for name in names}
    assert top == {"translate-en_de-1_0"}, top
    for needed in ("metadata.json", "model/model.bin", "model/config.json", "model/shared_vocabulary.json",
                   "sentencepiece.model"):
        assert "translate-en_de-1_0/" + needed in names, (needed, names)
    metadata = json.loads(archive.read("translate-en_de-1_0/metadata.json"))
    assert metadata["from_code"] == "en" and metadata["to_code"] == "de" and metadata["type"] == "translate", metadata

import argostranslate.package  # noqa: E402 - after the environment is set
import argostranslate.sbd  # noqa: E402
import argostranslate.translate  # noqa: E402

argostranslate.sbd.MiniSBDSentencizer.split_sentences = lambda self, text: [text]
argostranslate.package.install_from_path(package)
installed = argostranslate.package.get_installed_packages()
assert [(p.from_code, p.to_code) for p in installed] == [("en", "de")], installed

with open(sources, encoding="utf-8") as f:
    lines = f.read().splitlines()
with open(expected, encoding="utf-8") as f:
    wanted = f.read().splitlines()
assert len(set(wanted)) > len(wanted) // 2, "the model translates too many lines alike to show anything"
for line, want in zip(lines, wanted):
    got = argostranslate.translate.translate(line, "en", "de")
    assert re.sub(" +", " ", got) == want, "%r: argos %r, trafo %r" % (line, got, want)
print("ok")
