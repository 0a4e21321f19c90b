"""Checks `trafo serve` with real clients: LibreTranslate's own Python client (libretranslatepy),
requests, and raw sockets. tests/serve_test.cpp runs one case per test:

    serve_check.py CASE --trafo BIN --checkpoint CKPT --dev FILE --workdir DIR

Every server listens on 127.0.0.1 only, on a port the system picks. A case exits 0 when every check
holds, and prints what failed otherwise.
"""

import argparse
import atexit
import gzip
import io
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import zipfile
import zlib

import requests
from libretranslatepy import LibreTranslateAPI

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import document_check  # noqa: E402  (tests/document_check.py)
import html_check  # noqa: E402  (tests/html_check.py)

DOCUMENTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "documents")

ARGS = None
FRENCH = "Ceci est une longue phrase écrite en français, une langue que personne ici ne traduit."
DECODING = ["--threads", "1", "--precision", "fp32"]
STARTED = []  # every server process, killed at exit if a failed check left it running


@atexit.register
def kill_leftovers():
    for process in STARTED:
        if process.poll() is None:
            process.kill()
            process.wait()


class Server:
    """A `trafo serve` process; `url` once it has said where it listens."""

    def __init__(self, *extra, checkpoints=None):
        command = [ARGS.trafo, "serve", "--port", "0"] + DECODING
        for checkpoint in checkpoints or [ARGS.checkpoint]:
            command += ["--checkpoint", checkpoint]
        # The log goes to a file: a pipe nobody reads could fill and stop the server.
        self.log = open(os.path.join(ARGS.workdir, "serve-%d.log" % len(STARTED)), "w+", encoding="utf-8")
        self.process = subprocess.Popen(command + list(extra), stdout=subprocess.PIPE, stderr=self.log, text=True)
        STARTED.append(self.process)
        line = self.process.stdout.readline()
        match = re.search(r"listening on (http://127\.0\.0\.1:(\d+))", line)
        if not match:
            self.process.kill()
            self.process.wait()
            self.log.seek(0)
            raise AssertionError("no start-up line: %r %r" % (line, self.log.read()))
        self.url, self.port = match.group(1), int(match.group(2))

    def stop(self, sig=signal.SIGTERM, within=60):
        self.process.send_signal(sig)
        code = self.process.wait(within)
        self.log.seek(0)
        self.errors = self.log.read()
        assert code == 0, "exit %d after %s: %s" % (code, sig, self.errors)

    def healthy(self):
        answer = requests.get(self.url + "/health", timeout=10)
        assert answer.status_code == 200 and answer.json()["status"] == "ok", answer.text

    def metric(self, name):
        text = requests.get(self.url + "/metrics", timeout=10).text
        match = re.search(r"^%s (\S+)$" % re.escape(name), text, re.M)
        return float(match.group(1)) if match else None


def offline(lines, *extra, command="translate", decoding=None):
    """What `trafo translate` (or another command) prints for `lines`."""
    result = subprocess.run([ARGS.trafo, command, "--checkpoint", ARGS.checkpoint] + (decoding or DECODING) + list(extra),
                            input="".join(line + "\n" for line in lines), capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def dev_lines(count):
    with open(ARGS.dev, encoding="utf-8") as f:
        lines = f.read().splitlines()
    return [lines[i % len(lines)] for i in range(count)]


def post(server, path, body, status=200):
    answer = requests.post(server.url + path, json=body, timeout=120)
    assert answer.status_code == status, "%s %s: %d %s" % (path, json.dumps(body)[:200], answer.status_code, answer.text)
    return answer.json()


def raw(server, data, read=True):
    """Sends bytes on a fresh connection; the status line's code (None: closed without one)."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as s:
        s.sendall(data)
        if not read:
            return None
        received = b""
        while b"\r\n\r\n" not in received:
            chunk = s.recv(65536)
            if not chunk:
                break
            received += chunk
    match = re.match(rb"HTTP/1\.[01] (\d{3})", received)
    return int(match.group(1)) if match else None


def http_request(method, path, body=b"", content_type="application/json"):
    head = "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n" % (method, path)
    if body or method == "POST":
        head += "Content-Type: %s\r\nContent-Length: %d\r\n" % (content_type, len(body))
    return head.encode() + b"\r\n" + body


def chunked(body, size=1000):
    """`body` in chunked transfer coding, `size` bytes a chunk."""
    out = b""
    for start in range(0, len(body), size):
        piece = body[start:start + size]
        out += b"%x\r\n" % len(piece) + piece + b"\r\n"
    return out + b"0\r\n\r\n"


def gzip_request(body, encoding):
    """A POST /translate whose JSON body is compressed (a few KB that unpack to `body`)."""
    packed = gzip.compress(body) if encoding == "gzip" else zlib.compress(body)
    head = ("POST /translate HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\n"
            "Content-Encoding: %s\r\nContent-Length: %d\r\n\r\n" % (encoding, len(packed)))
    return head.encode() + packed


# -- cases ------------------------------------------------------------------------------------------


def case_equal():
    """Served text equals offline text, whatever shared the batch, for every client and option."""
    # Paragraphs too: a line of several sentences is translated sentence by sentence, served as offline.
    paragraphs = [" ".join(dev_lines(3)), "  ".join(dev_lines(5)[2:])]
    lines = dev_lines(60) + ["", "tab\there", "  spaces  around  ", "Ünïcödé ☃ text"] + paragraphs
    expected = offline(lines)
    alone = offline(dev_lines(5))
    assert expected[-2] == " ".join(alone[:3]), (expected[-2], alone[:3])
    assert expected[-1] == "  ".join(alone[2:]), (expected[-1], alone[2:])
    assert len(set(expected)) > len(lines) // 2, "the model translates too many lines alike to show anything"
    # Decoders under load run on one thread each, and a lone one on all: a sentence's text must not
    # depend on the threads, greedy or beam.
    two_threads = ["--threads", "2", "--precision", "fp32"]
    assert offline(lines, decoding=two_threads) == expected
    assert offline(lines[:20], "--beam", "4", "--n-best", "2", decoding=two_threads) == \
        offline(lines[:20], "--beam", "4", "--n-best", "2")
    # Two decoders on the one thread: sentences of one request and kinds of requests are decoded
    # side by side, each decoder with a batch of its own.
    server = Server("--decoders", "2")
    # Keep the decoder busy, then let 40 clients arrive at once: their sentences share batches.
    busy = threading.Thread(target=post, args=(server, "/translate", {"q": dev_lines(400), "source": "en", "target": "de"}))
    busy.start()
    got = {}
    failures = []

    def client(i):
        try:
            if i % 3 == 0:  # LibreTranslate's own client: a form body
                got[(i,)] = LibreTranslateAPI(server.url).translate(lines[i], "en", "de")
            elif i % 3 == 1:
                got[(i,)] = post(server, "/translate", {"q": lines[i], "source": "en", "target": "de"})["translatedText"]
            else:
                span = list(range(i, min(i + 3, len(lines))))
                answer = post(server, "/translate", {"q": [lines[j] for j in span], "source": "en", "target": "de"})
                got[tuple(span)] = answer["translatedText"]
        except Exception as error:  # noqa: BLE001 - reported below
            failures.append("client %d: %r" % (i, error))

    clients = [threading.Thread(target=client, args=(i,)) for i in range(len(lines))]
    for c in clients:
        c.start()
    for c in clients:
        c.join()
    busy.join()
    assert not failures, failures
    for span, text in got.items():
        texts = text if isinstance(text, list) else [text]
        for j, t in zip(span, texts):
            assert t == expected[j], "line %d: served %r, offline %r" % (j, t, expected[j])
    for decoder in ("0", "1"):
        decoded = server.metric('trafo_decoder_sentences_total{decoder="%s"}' % decoder)
        assert decoded and decoded > 0, "decoder %s decoded nothing: %s" % (decoder, decoded)
    batches, sentences = server.metric("trafo_batch_sentences_count"), server.metric("trafo_batch_sentences_sum")
    assert batches and sentences > batches, "no batch held more than one sentence: %s batches, %s sentences" % (batches, sentences)

    # split_sentences false: the paragraph whole, as `translate --split-sentences off` has it.
    whole = post(server, "/translate", {"q": paragraphs[0], "source": "en", "target": "de", "split_sentences": False})
    assert whole["translatedText"] == offline(paragraphs[:1], "--split-sentences", "off")[0], whole

    # The repetition guard, served as offline, while plain requests share the decoder.
    guarded = post(server, "/v1/translate", {"text": lines[:20], "source": "en", "target": "de", "beam": 2,
                                             "no_repeat_ngram": 2, "repetition_penalty": 1.5})
    assert [t["text"] for t in guarded["translations"]] == \
        offline(lines[:20], "--beam", "2", "--no-repeat-ngram", "2", "--repetition-penalty", "1.5"), guarded

    # A text of several lines: each line is translated, the line breaks kept.
    multi = post(server, "/translate", {"q": lines[0] + "\n" + lines[1], "source": "en", "target": "de"})
    assert multi["translatedText"] == expected[0] + "\n" + expected[1], multi

    # LibreTranslate's alternatives: n-best of a beam of (alternatives + 1), at least the server's beam.
    nbest = offline(lines[:5], "--beam", "3", "--n-best", "3")
    by_line = {}
    for row in nbest:
        index, text, _ = row.split(" ||| ")
        by_line.setdefault(int(index), []).append(text)
    answer = post(server, "/translate", {"q": lines[:5], "source": "en", "target": "de", "alternatives": 2})
    for j in range(5):
        assert answer["translatedText"][j] == by_line[j][0], (j, answer, by_line[j])
        assert answer["alternatives"][j] == by_line[j][1:], (j, answer, by_line[j])

    # The native endpoint: beams with n-best and scores, sampling with a seed, alignments, scores.
    rows = offline(lines[:8], "--beam", "4", "--n-best", "2", "--length-penalty", "0.6")
    answer = post(server, "/v1/translate", {"text": lines[:8], "source": "en", "target": "de", "beam": 4, "n_best": 2,
                                            "length_penalty": 0.6})
    served_rows = ["%d ||| %s ||| %.4f" % (j, h["text"], h["score"])
                   for j, item in enumerate(answer["translations"]) for h in item["hypotheses"]]
    assert served_rows == rows, (served_rows, rows)
    tagged = offline(lines[:10], "--tag", "<bt>")
    answer = post(server, "/v1/translate", {"text": lines[:10], "source": "en", "target": "de", "tag": "<bt>"})
    assert [t["text"] for t in answer["translations"]] == tagged, (answer, tagged)
    assert tagged != expected[:10], "the tag changed no translation: nothing shown"
    sampled = offline(lines[:20], "--sampling-topk", "0", "--seed", "7")
    answer = post(server, "/v1/translate", {"text": lines[:20], "source": "en", "target": "de", "sampling_topk": 0,
                                            "seed": 7})
    assert [t["text"] for t in answer["translations"]] == sampled, (answer, sampled)
    aligned = offline(lines[:10], "--alignment")
    answer = post(server, "/v1/translate", {"text": lines[:10], "source": "en", "target": "de", "alignment": True})
    assert ["%s ||| %s" % (t["text"], t["alignment"]) for t in answer["translations"]] == aligned, (answer, aligned)
    # Target prefixes: the first word of a translation for every other line, none for the rest.
    prefixes = [expected[j].split(" ")[0] if j % 2 == 0 else "" for j in range(10)]
    prefix_file = os.path.join(ARGS.workdir, "prefix.txt")
    with open(prefix_file, "w", encoding="utf-8") as f:
        f.write("".join(prefix + "\n" for prefix in prefixes))
    prefixed = offline(lines[:10], "--target-prefix", prefix_file)
    answer = post(server, "/v1/translate", {"text": lines[:10], "source": "en", "target": "de",
                                            "target_prefix": prefixes})
    assert [t["text"] for t in answer["translations"]] == prefixed, (answer, prefixed)
    for j in range(0, 10, 2):
        assert prefixed[j].startswith(prefixes[j]), (j, prefixed[j], prefixes[j])
    post(server, "/v1/translate", {"text": lines[:2], "source": "en", "target": "de", "target_prefix": ["x"]}, 400)
    # A glossary: a word of the first line must come out as a word of another translation, offline
    # (translate --glossary) and served (the request's own glossary) alike.
    word, term = lines[0].split(" ")[0], expected[1].split(" ")[0]
    glossary_file = os.path.join(ARGS.workdir, "glossary.tsv")
    with open(glossary_file, "w", encoding="utf-8") as f:
        f.write(word + "\t" + term + "\n")
    glossed = offline(lines[:10], "--glossary", glossary_file)
    answer = post(server, "/v1/translate", {"text": lines[:10], "source": "en", "target": "de",
                                            "glossary": [[word, term]]})
    assert [t["text"] for t in answer["translations"]] == glossed, (answer, glossed)
    for j in range(10):
        if word in lines[j].split(" "):
            assert term in glossed[j], (j, word, term, glossed[j])
    post(server, "/v1/translate", {"text": lines[:2], "source": "en", "target": "de", "glossary": "x"}, 400)
    # HTML, as LibreTranslate's clients send it (format "html"): the served page is the offline one
    # (translate --format html), and well-formed with every tag once.
    pages = ['<p>%s <b>%s</b></p><ul><li><a href="/a?b=1&amp;c=2">%s</a><br>%s</li></ul><pre>a  b</pre>' %
             (lines[0].split(" ")[0], " ".join(lines[0].split(" ")[1:]), lines[1], lines[2]), "<p>%s</p>" % lines[3]]
    for page in pages:
        served = post(server, "/translate", {"q": page, "source": "en", "target": "de", "format": "html"})
        assert served["translatedText"] == "\n".join(offline([page], "--format", "html")), (served, page)
        assert html_check.check(page, served["translatedText"]) == [], html_check.check(page, served["translatedText"])
    listed = post(server, "/translate", {"q": pages, "source": "en", "target": "de", "format": "html"})
    assert listed["translatedText"] == [post(server, "/translate", {"q": p, "source": "en", "target": "de",
                                                                    "format": "html"})["translatedText"] for p in pages]
    post(server, "/translate", {"q": pages[0], "source": "en", "target": "de", "format": "xml"}, 400)
    post(server, "/translate", {"q": pages[0], "source": "en", "target": "de", "format": "html", "alternatives": 2}, 400)
    src, tgt = os.path.join(ARGS.workdir, "src.txt"), os.path.join(ARGS.workdir, "tgt.txt")
    with open(src, "w", encoding="utf-8") as f:
        f.write("".join(line + "\n" for line in lines[:10]))
    with open(tgt, "w", encoding="utf-8") as f:
        f.write("".join(line + "\n" for line in expected[:10]))
    scores = offline([], "--src", src, "--tgt", tgt, command="score-pairs")
    answer = post(server, "/v1/score", {"text": lines[:10], "translation": expected[:10], "source": "en", "target": "de"})
    for j, item in enumerate(answer["scores"]):
        assert abs(item["log_prob"] - float(scores[j])) < 1e-3, (j, item, scores[j])

    # Greedy requests (the continuous batch) and beam, tagged and sampled ones (batches of their own)
    # at once: each kind waits for its turn, and every answer is still the offline one.
    beamed = offline(lines[:20], "--beam", "4")
    mixed, mixed_failures = {}, []

    def mixed_client(i):
        try:
            j = i % 20
            kind = i % 4
            if kind == 0:
                mixed[i] = (post(server, "/v1/translate", {"text": [lines[j]], "source": "en", "target": "de", "beam": 4})
                            ["translations"][0]["text"], beamed[j])
            elif kind == 1:
                mixed[i] = (post(server, "/v1/translate", {"text": [lines[j % 10]], "source": "en", "target": "de",
                                                           "tag": "<bt>"})["translations"][0]["text"], tagged[j % 10])
            elif kind == 2:
                mixed[i] = (post(server, "/v1/translate", {"text": lines[:20], "source": "en", "target": "de",
                                                           "sampling_topk": 0, "seed": 7})["translations"][j]["text"],
                            sampled[j])
            else:
                mixed[i] = (post(server, "/translate", {"q": lines[j], "source": "en", "target": "de"})["translatedText"],
                            expected[j])
        except Exception as error:  # noqa: BLE001 - reported below
            mixed_failures.append("client %d: %r" % (i, error))

    mixed_clients = [threading.Thread(target=mixed_client, args=(i,)) for i in range(48)]
    for c in mixed_clients:
        c.start()
    for c in mixed_clients:
        c.join()
    assert not mixed_failures, mixed_failures
    for i, (served, wanted) in mixed.items():
        assert served == wanted, "client %d (kind %d): served %r, offline %r" % (i, i % 4, served, wanted)

    languages = LibreTranslateAPI(server.url).languages()
    assert languages == [{"code": "en", "name": "English", "targets": ["de"]}], languages
    server.stop()


def case_fair():
    """A one-sentence request is answered while a 2,000-sentence one is decoded."""
    server = Server("--max-sentences", "5000")
    long_lines = dev_lines(2000)
    result = {}

    def long_request():
        result["long"] = post(server, "/translate", {"q": long_lines, "source": "en", "target": "de"})

    runner = threading.Thread(target=long_request)
    runner.start()
    deadline = time.time() + 60
    while (server.metric("trafo_queue_sentences") or 0) == 0 and runner.is_alive():
        assert time.time() < deadline, "the long request never queued"
        time.sleep(0.01)
    started = time.time()
    short = post(server, "/translate", {"q": "Felix found the dirty chicken.", "source": "en", "target": "de"})
    took = time.time() - started
    assert runner.is_alive(), "the long request ended before the short one was answered: nothing shown"
    runner.join()
    assert short["translatedText"] == offline(["Felix found the dirty chicken."])[0]
    expected = dict(zip(dev_lines(200), offline(dev_lines(200))))
    assert [expected[line] for line in long_lines] == result["long"]["translatedText"]
    print("short request answered in %.2f s while the long one ran" % took)
    server.stop()


def case_bad():
    """Bad requests get a status and a JSON reason; the server answers /health after each."""
    server = Server("--max-sentences", "50", "--max-line-bytes", "200", "--max-request-bytes", "4096")
    ok = {"source": "en", "target": "de"}
    cases = [
        ("malformed JSON", http_request("POST", "/translate", b'{"q": "a", '), 400),
        ("JSON that is not an object", http_request("POST", "/translate", b"[1, 2]"), 400),
        ("q a number", http_request("POST", "/translate", json.dumps(dict(ok, q=5)).encode()), 400),
        ("q a list of numbers", http_request("POST", "/translate", json.dumps(dict(ok, q=[1])).encode()), 400),
        ("no q", http_request("POST", "/translate", json.dumps(ok).encode()), 400),
        ("no source", http_request("POST", "/translate", json.dumps({"q": "a", "target": "de"}).encode()), 400),
        ("source a list", http_request("POST", "/translate", json.dumps({"q": "a", "source": ["en"], "target": "de"}).encode()), 400),
        ("invalid UTF-8 in JSON", http_request("POST", "/translate", b'{"q": "a\xff\xfe", "source": "en", "target": "de"}'), 400),
        ("invalid UTF-8 in a form", http_request("POST", "/translate", b"q=%FF%FE&source=en&target=de",
                                                 "application/x-www-form-urlencoded"), 400),
        ("an empty list", http_request("POST", "/translate", json.dumps(dict(ok, q=[])).encode()), 400),
        ("too many lines", http_request("POST", "/translate", json.dumps(dict(ok, q=["a"] * 51)).encode()), 413),
        ("too long a line", http_request("POST", "/translate", json.dumps(dict(ok, q="a" * 201)).encode()), 413),
        ("too large a body", http_request("POST", "/translate", json.dumps(dict(ok, q=["ab"] * 1200)).encode()), 413),
        ("an unknown direction", http_request("POST", "/translate", json.dumps({"q": "a", "source": "fr", "target": "de"}).encode()), 400),
        ("source auto, text of no served language", http_request("POST", "/translate", json.dumps({"q": FRENCH, "source": "auto", "target": "de"}).encode()), 400),
        ("source auto into a target not served", http_request("POST", "/translate", json.dumps({"q": "a", "source": "auto", "target": "fr"}).encode()), 400),
        ("format xml", http_request("POST", "/translate", json.dumps(dict(ok, q="a", format="xml")).encode()), 400),
        ("a huge beam", http_request("POST", "/v1/translate", json.dumps(dict(ok, text="a", beam=100000)).encode()), 400),
        ("n_best above the beam", http_request("POST", "/v1/translate", json.dumps(dict(ok, text="a", beam=2, n_best=3)).encode()), 400),
        ("sampling_topp alone", http_request("POST", "/v1/translate", json.dumps(dict(ok, text="a", sampling_topp=0.5)).encode()), 400),
        ("a negative top-k", http_request("POST", "/v1/translate", json.dumps(dict(ok, text="a", sampling_topk=-5)).encode()), 400),
        ("a repetition penalty below 1",
         http_request("POST", "/v1/translate", json.dumps(dict(ok, text="a", repetition_penalty=0.5)).encode()), 400),
        ("an unknown tag", http_request("POST", "/v1/translate", json.dumps(dict(ok, text="a", tag="<xx>")).encode()), 400),
        ("beam a string", http_request("POST", "/v1/translate", json.dumps(dict(ok, text="a", beam="4")).encode()), 400),
        ("score with fewer translations", http_request("POST", "/v1/score", json.dumps(dict(ok, text=["a", "b"], translation=["c"])).encode()), 400),
        ("an unknown endpoint", http_request("GET", "/nothing"), 404),
        # A chunked body counts its decoded bytes against --max-request-bytes: 413 as they pass it.
        ("a chunked body past the limit", b"POST /translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                                          b"Transfer-Encoding: chunked\r\n\r\n" + chunked(json.dumps(dict(ok, q=["ab"] * 1200)).encode()), 413),
        ("a chunk past the limit", b"POST /translate HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                                   b"100000\r\n", 413),
        # Bodies --max-request-bytes could not bound: another framing, compressed; two framings.
        ("another framing", b"POST /translate HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: identity\r\n\r\n", 411),
        ("a gzip-coded chunked body", b"POST /translate HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"
                                      + chunked(gzip.compress(b"{}")), 415),
        ("two framings", b"POST /translate HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n"
                         + chunked(b"{}"), 400),
        ("JSON nested 1,500 deep", http_request("POST", "/translate", b'{"q": ' + b"[" * 1500 + b"]" * 1500 + b"}"), 400),
        ("a gzip body", gzip_request(json.dumps(dict(ok, q=["ab"] * 200000)).encode(), "gzip"), 415),
        ("a deflate body", gzip_request(json.dumps(dict(ok, q="a")).encode(), "deflate"), 415),
        ("a request line that is not HTTP", b"HELLO THERE\r\n\r\n", 400),
    ]
    for name, data, status in cases:
        got = raw(server, data)
        assert got == status, "%s: %s, not %d" % (name, got, status)
        server.healthy()
    # JSON reasons, as LibreTranslate gives them.
    answer = requests.post(server.url + "/translate", json={"q": FRENCH, "source": "auto", "target": "de"}, timeout=10)
    assert answer.status_code == 400 and "the text is in fr" in answer.json()["error"], answer.text
    answer = requests.post(server.url + "/translate", json=dict(ok, q=["ab"] * 1200), timeout=10)
    assert answer.status_code == 413 and "error" in answer.json(), answer.text
    # A small chunked body, as a client streaming a body of unknown length sends it, is taken, from
    # Python's requests with a generator too; the answer is the one a sized body gets.
    small = json.dumps(dict(ok, q=dev_lines(2))).encode()
    sized = requests.post(server.url + "/translate", data=small, headers={"Content-Type": "application/json"}, timeout=60)
    streamed = requests.post(server.url + "/translate", data=(small[i:i + 7] for i in range(0, len(small), 7)),
                             headers={"Content-Type": "application/json"}, timeout=60)
    assert sized.status_code == 200 and streamed.status_code == 200, (sized.text, streamed.text)
    assert streamed.json() == sized.json(), (streamed.text, sized.text)

    # A client that goes away in the middle of its body, or before reading its answer.
    raw(server, b"POST /translate HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"q\": ",
        read=False)
    raw(server, http_request("POST", "/translate", json.dumps(dict(ok, q=dev_lines(40))).encode()), read=False)
    server.healthy()

    # A client that sends its headers a byte at a time: others are served meanwhile.
    def slow_client():
        try:
            with socket.create_connection(("127.0.0.1", server.port), timeout=30) as s:
                for byte in b"GET /health HTTP/1.1\r\nHost: x\r\n":
                    s.sendall(bytes([byte]))
                    time.sleep(0.1)
        except OSError:
            pass  # dropped: fine

    slow = threading.Thread(target=slow_client)
    slow.start()
    for _ in range(10):
        started = time.time()
        server.healthy()
        assert time.time() - started < 2, "a health check waited behind a slow client"
        time.sleep(0.1)
    slow.join()
    refused = server.metric('trafo_sentences_total{outcome="refused"}')
    assert refused is not None and refused >= 0
    server.stop()

    # The queue's and the connections' bounds: 503 with a reason.
    server = Server("--max-queue", "10")
    answer = requests.post(server.url + "/translate", json=dict(ok, q=dev_lines(11)), timeout=10)
    assert answer.status_code == 503 and "error" in answer.json(), answer.text
    assert post(server, "/translate", dict(ok, q=dev_lines(10)))["translatedText"] == offline(dev_lines(10))
    server.stop()

    # Connections being read hold no worker: with one worker, two clients half-way through their
    # headers leave /health and a translation answered; each is served when it has sent the rest.
    server = Server("--max-connections", "1", "--read-timeout", "10")
    held = []
    for _ in range(2):
        s = socket.create_connection(("127.0.0.1", server.port), timeout=30)
        s.sendall(b"GET /health HTTP/1.1\r\n")
        held.append(s)
    server.healthy()
    assert post(server, "/translate", dict(ok, q=dev_lines(3)))["translatedText"] == offline(dev_lines(3))
    for s in held:
        s.sendall(b"Host: x\r\nConnection: close\r\n\r\n")
        assert s.recv(100).startswith(b"HTTP/1.1 200"), "a held connection was not served"
        s.close()
    # Past one worker and one waiting, a request that decodes is answered 503 at once, with a reason.
    answers = []

    def long_request():
        answers.append(requests.post(server.url + "/translate", json=dict(ok, q=dev_lines(600)), timeout=120))

    runners = [threading.Thread(target=long_request) for _ in range(4)]
    for runner in runners:
        runner.start()
    for runner in runners:
        runner.join()
    statuses = sorted(a.status_code for a in answers)
    assert statuses.count(200) >= 2 and set(statuses) <= {200, 503}, statuses
    for a in answers:
        assert a.status_code == 200 or ("error" in a.json() and a.headers.get("Retry-After") == "1"), a.text
    server.stop()

    server = Server("--request-timeout", "1", "--max-sentences", "20000", "--max-request-bytes", "8000000")
    answer = requests.post(server.url + "/translate", json=dict(ok, q=dev_lines(20000)), timeout=120)
    assert answer.status_code == 503 and "error" in answer.json(), answer.text
    server.healthy()
    server.stop()


def case_hostile():
    """Clients that connect and say nothing, drip their headers, or stop reading never take the server
    down: /health and translations are answered throughout, and a silent client is dropped on time."""
    server = Server("--max-connections", "2", "--read-timeout", "3")
    ok = {"source": "en", "target": "de"}
    silent = [socket.create_connection(("127.0.0.1", server.port), timeout=30) for _ in range(8)]
    stop_dripping = threading.Event()

    def dripping_client():
        try:
            with socket.create_connection(("127.0.0.1", server.port), timeout=30) as s:
                for byte in b"POST /translate HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n" + b"x" * 5000:
                    if stop_dripping.is_set():
                        return
                    s.sendall(bytes([byte]))
                    time.sleep(0.2)
        except OSError:
            pass  # dropped at its deadline: fine

    drippers = [threading.Thread(target=dripping_client) for _ in range(8)]
    for dripper in drippers:
        dripper.start()
    time.sleep(0.5)
    wanted = offline(dev_lines(2))
    for _ in range(5):
        started = time.time()
        server.healthy()
        assert time.time() - started < 1, "a health check waited %.1f s behind idle clients" % (time.time() - started)
        assert post(server, "/translate", dict(ok, q=dev_lines(2)))["translatedText"] == wanted
        time.sleep(0.3)
    # A silent client is dropped at --read-timeout (3 s after it connected), not later.
    started = time.time()
    assert silent[0].recv(100) == b"", "a silent client got an answer"
    assert time.time() - started < 3.5, "a silent client was kept %.1f s" % (time.time() - started)
    for s in silent:
        s.close()
    # A client that drips a request is answered 408 at the deadline of the whole request.
    stop_dripping.set()
    for dripper in drippers:
        dripper.join()
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as s:
        started = time.time()
        s.sendall(b"POST /translate HTTP/1.1\r\nHost: x\r\n")
        time.sleep(1.5)
        s.sendall(b"Content-Length: 10\r\n")
        received = s.recv(200)
        assert received.startswith(b"HTTP/1.1 408") and time.time() - started < 3.5, received
    # Clients that send requests and never read the answers, and ones that go away mid-request.
    for _ in range(20):
        s = socket.create_connection(("127.0.0.1", server.port), timeout=30)
        s.sendall(http_request("POST", "/translate", json.dumps(dict(ok, q=dev_lines(5))).encode()) * 3)
        s.close()
    server.healthy()
    deadline = time.time() + 60  # their sentences are decoded all the same; then the workers are free
    while requests.post(server.url + "/translate", json=dict(ok, q="a"), timeout=60).status_code != 200:
        assert time.time() < deadline, "the server did not recover from clients that left"
        time.sleep(0.2)
    # Two requests in one write (pipelined) get two answers, in order.
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as s:
        one = "GET /health HTTP/1.1\r\nHost: x\r\n\r\n"
        s.sendall((one + one.replace("/health", "/nothing")).encode())
        received = b""
        while received.count(b"HTTP/1.1") < 2:
            received += s.recv(4096)
        assert received.index(b"HTTP/1.1 200") < received.index(b"HTTP/1.1 404"), received
    # A client that waits for "100 Continue" before its body (curl does, past 1 KiB) gets it.
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as s:
        body = json.dumps(dict(ok, q=dev_lines(3))).encode()
        s.sendall(b"POST /translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nConnection: close\r\n"
                  b"Expect: 100-continue\r\nContent-Length: %d\r\n\r\n" % len(body))
        assert s.recv(100).startswith(b"HTTP/1.1 100 Continue"), "no 100 Continue"
        s.sendall(body)
        received = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            received += chunk
        assert json.loads(received.split(b"\r\n\r\n", 1)[1]).get("translatedText") == offline(dev_lines(3)), received
    # A form (LibreTranslate's client sends one) is read up to --max-request-bytes, not 8 KiB.
    lines = dev_lines(1000)
    assert len("\n".join(lines)) > 16384
    answer = requests.post(server.url + "/translate", data=dict(ok, q="\n".join(lines)), timeout=60)
    assert answer.status_code == 200 and answer.json()["translatedText"] == "\n".join(offline(lines)), answer.text[:200]
    # Headers past 16 KiB: 431.
    assert raw(server, b"GET /health HTTP/1.1\r\nX-Big: " + b"a" * 20000 + b"\r\n\r\n") == 431
    server.healthy()
    server.stop()


def case_keys():
    """With --api-keys, a valid api_key is needed (403 otherwise), and keys never reach the log."""
    keys = os.path.join(ARGS.workdir, "keys.txt")
    with open(keys, "w", encoding="utf-8") as f:
        f.write("# the keys of our apps\nkey-one-3f9a\n\nkey-two-77c1\n")
    server = Server("--api-keys", keys)
    body = {"q": "Felix found the dirty chicken.", "source": "en", "target": "de"}
    for key, status in [(None, 403), ("", 403), ("key-one-3f9", 403), ("key-one-3f9a-", 403), ("key-two-77c1", 200)]:
        answer = requests.post(server.url + "/translate", json=dict(body, api_key=key) if key is not None else body,
                               timeout=30)
        assert answer.status_code == status, (key, answer.status_code, answer.text)
        if status == 403:
            assert "error" in answer.json()
    assert LibreTranslateAPI(server.url, "key-one-3f9a").translate(body["q"], "en", "de") == offline([body["q"]])[0]
    try:
        LibreTranslateAPI(server.url, "wrong").translate(body["q"], "en", "de")
        raise AssertionError("a wrong key was taken")
    except Exception as error:  # noqa: BLE001 - urllib's HTTPError
        assert "403" in str(error), error
    # /health and /languages are public, as LibreTranslate has /languages (a client asks for the
    # languages before it has a key); /v1 endpoints and /metrics need a key, and /metrics takes it as
    # a bearer token too, as Prometheus sends it.
    assert requests.get(server.url + "/health", timeout=10).status_code == 200
    assert requests.get(server.url + "/languages", timeout=10).json()[0]["code"] == "en"
    assert requests.post(server.url + "/languages", json={"api_key": "wrong"}, timeout=10).status_code == 200
    v1 = {"text": [body["q"]], "source": "en", "target": "de"}
    assert requests.post(server.url + "/v1/translate", json=v1, timeout=30).status_code == 403
    assert requests.post(server.url + "/v1/translate", json=dict(v1, api_key="key-two-77c1"), timeout=30).status_code == 200
    # The key in the query beside a JSON body (as guide-serving.md allows), on both dialects.
    for path, fields in [("/translate", body), ("/v1/translate", v1)]:
        for key, status in [("key-one-3f9a", 200), ("wrong", 403)]:
            answer = requests.post(server.url + path, params={"api_key": key}, json=fields, timeout=30)
            assert answer.status_code == status, (path, key, answer.status_code, answer.text)
    assert requests.post(server.url + "/v1/score", json=dict(v1, translation=["x"]), timeout=30).status_code == 403
    assert requests.get(server.url + "/metrics", timeout=10).status_code == 403
    assert requests.get(server.url + "/metrics", params={"api_key": "wrong"}, timeout=10).status_code == 403
    assert "trafo_requests_total" in requests.get(server.url + "/metrics", params={"api_key": "key-one-3f9a"}, timeout=10).text
    answer = requests.get(server.url + "/metrics", headers={"Authorization": "Bearer key-two-77c1"}, timeout=10)
    assert answer.status_code == 200 and "trafo_requests_total" in answer.text
    server.stop()
    assert "key-one" not in server.errors and "key-two" not in server.errors, server.errors


def case_stop():
    """SIGTERM and SIGINT: the request in flight is answered in full, then exit 0."""
    for sig in (signal.SIGTERM, signal.SIGINT):
        server = Server()
        lines = dev_lines(1000)
        result = {}

        def long_request():
            result["answer"] = requests.post(server.url + "/translate", json={"q": lines, "source": "en", "target": "de"},
                                             timeout=120)

        runner = threading.Thread(target=long_request)
        runner.start()
        deadline = time.time() + 60
        while (server.metric("trafo_queue_sentences") or 0) == 0:
            assert time.time() < deadline and runner.is_alive(), "the request never queued"
            time.sleep(0.01)
        server.stop(sig)
        runner.join()
        answer = result["answer"]
        assert answer.status_code == 200 and len(answer.json()["translatedText"]) == len(lines), answer.text[:300]
        try:
            requests.get(server.url + "/health", timeout=5)
            raise AssertionError("still answering after it stopped")
        except requests.ConnectionError:
            pass

    # SIGTERM with requests past --max-connections: every request sent before it is answered, in
    # full (taken before the signal) or with 503 (refused, or arrived as the server stopped).
    server = Server("--max-connections", "4")
    sockets = []
    for i in range(20):
        s = socket.create_connection(("127.0.0.1", server.port), timeout=120)
        body = json.dumps({"q": dev_lines(200 + i), "source": "en", "target": "de"}).encode()
        s.sendall(http_request("POST", "/translate", body))
        sockets.append(s)
    deadline = time.time() + 60
    while (server.metric("trafo_queue_sentences") or 0) == 0:
        assert time.time() < deadline, "no request queued"
        time.sleep(0.01)
    server.process.send_signal(signal.SIGTERM)
    statuses = []
    for s in sockets:
        received = b""
        while True:
            chunk = s.recv(1 << 20)
            if not chunk:
                break
            received += chunk
        s.close()
        match = re.match(rb"HTTP/1\.1 (\d{3})", received)
        assert match, "a request got its connection closed with no answer: %r" % received[:100]
        status = int(match.group(1))
        statuses.append(status)
        if status == 200:
            assert len(json.loads(received.split(b"\r\n\r\n", 1)[1])["translatedText"]) >= 200
        else:
            assert status == 503 and b"Retry-After: 1" in received, received[:300]
    assert statuses.count(200) >= 4, statuses
    assert server.process.wait(60) == 0


def case_detect():
    """source "auto" and /detect as LibreTranslate's client uses them: the language of each text found
    among those served; text in another one is refused, naming it."""
    server = Server()
    lt = LibreTranslateAPI(server.url)
    lines = dev_lines(2)
    detected = lt.detect(lines[0])
    assert detected[0]["language"] == "en" and detected[0]["confidence"] > 50, detected
    assert lt.translate(lines[0], "auto", "de") == offline(lines[:1])[0]
    assert lt.languages() == [{"code": "en", "name": "English", "targets": ["de"]}], lt.languages()
    both = post(server, "/translate", {"q": lines, "source": "auto", "target": "de"})
    assert both["translatedText"] == offline(lines), both
    assert [d["language"] for d in both["detectedLanguage"]] == ["en", "en"], both
    one = post(server, "/translate", {"q": lines[0], "source": "auto", "target": "de"})
    assert one["detectedLanguage"]["language"] == "en" and one["translatedText"] == offline(lines[:1])[0], one
    # A short string CLD2 cannot tell is the one language served (or the model's identifier's label).
    short = post(server, "/translate", {"q": "ok", "source": "auto", "target": "de"})
    assert short["detectedLanguage"]["language"] == "en", short
    # Text in a language no model here takes: /detect names it, /translate refuses it naming it.
    assert lt.detect(FRENCH)[0]["language"] == "fr"
    refused = requests.post(server.url + "/translate", json={"q": FRENCH, "source": "auto", "target": "de"}, timeout=30)
    assert refused.status_code == 400 and "fr" in refused.json()["error"], refused.text
    form = requests.post(server.url + "/detect", data={"q": lines[1]}, timeout=30)
    assert form.status_code == 200 and form.json()[0]["language"] == "en", form.text
    server.healthy()


def case_cache():
    """A sentence asked again is answered from the cache, with the text decoding gave it; other options
    are other entries; --cache-sentences 0 keeps none."""
    lines = list(dict.fromkeys(dev_lines(50)))[:30]
    assert len(lines) == 30
    expected = offline(lines)
    server = Server("--cache-sentences", "20")
    assert post(server, "/translate", {"q": lines[:20], "source": "en", "target": "de"})["translatedText"] == expected[:20]
    assert server.metric("trafo_cache_hits_total") == 0 and server.metric("trafo_cache_misses_total") == 20
    # Half repeats, half new, in another order: the repeats from memory, the text as offline.
    mixed = lines[10:30][::-1]
    assert post(server, "/translate", {"q": mixed, "source": "en", "target": "de"})["translatedText"] == expected[10:30][::-1]
    assert server.metric("trafo_cache_hits_total") == 10 and server.metric("trafo_cache_misses_total") == 30
    assert server.metric("trafo_cache_sentences") == 20
    decoded = server.metric("trafo_decoder_sentences_total{decoder=\"0\"}")
    # A paragraph's sentences are entries of their own; a beam is another entry.
    paragraph = " ".join(lines[25:28])
    assert post(server, "/translate", {"q": paragraph, "source": "en", "target": "de"})["translatedText"] == \
        " ".join(expected[25:28])
    assert server.metric("trafo_decoder_sentences_total{decoder=\"0\"}") == decoded
    beam = post(server, "/v1/translate", {"text": lines[29:30], "source": "en", "target": "de", "beam": 3})
    assert beam["translations"][0]["text"] == offline(lines[29:30], "--beam", "3")[0]
    assert server.metric("trafo_decoder_sentences_total{decoder=\"0\"}") == decoded + 1
    server.stop()
    off = Server("--cache-sentences", "0")
    for _ in range(2):
        assert post(off, "/translate", {"q": lines[:5], "source": "en", "target": "de"})["translatedText"] == expected[:5]
    assert off.metric("trafo_cache_hits_total") == 0 and off.metric("trafo_cache_sentences") == 0
    assert off.metric("trafo_decoder_sentences_total{decoder=\"0\"}") == 10


def case_start_errors():
    """A bad checkpoint, a taken port or a bad option: one line and exit 2."""
    def start(*extra):
        result = subprocess.run([ARGS.trafo, "serve"] + DECODING + list(extra), capture_output=True, text=True, timeout=120)
        return result.returncode, result.stderr.strip().splitlines()

    bad = os.path.join(ARGS.workdir, "bad.pt")
    with open(bad, "wb") as f:
        f.write(b"not a checkpoint")
    server = Server()
    for extra in (["--checkpoint", bad, "--port", "0"],
                  ["--checkpoint", os.path.join(ARGS.workdir, "missing.pt"), "--port", "0"],
                  ["--checkpoint", ARGS.checkpoint, "--port", str(server.port)],
                  ["--checkpoint", ARGS.checkpoint, "--checkpoint", ARGS.checkpoint, "--port", "0"],
                  ["--checkpoint", ARGS.checkpoint, "--port", "70000"],
                  ["--checkpoint", ARGS.checkpoint, "--max-connections", "0"],
                  ["--checkpoint", ARGS.checkpoint, "--decoders", "-1"],
                  ["--checkpoint", ARGS.checkpoint, "--api-keys", os.path.join(ARGS.workdir, "no-keys.txt")],
                  ["--checkpoint", ARGS.checkpoint, "--host", "256.1.1.1", "--port", "0"],
                  ["--checkpoint", ARGS.checkpoint, "--host", "", "--port", "0"],
                  ["--checkpoint", ARGS.checkpoint, "--api-keys", ARGS.workdir, "--port", "0"]):
        code, lines = start(*extra)
        errors = [line for line in lines if "error" in line]
        assert code == 2 and len(errors) == 1 and errors[0].startswith("trafo: error:"), (extra, code, lines)
        if "--host" in extra and extra[extra.index("--host") + 1] == "":
            assert "--host is empty" in errors[0], errors
        if "--api-keys" in extra and extra[extra.index("--api-keys") + 1] == ARGS.workdir:
            assert "is a directory" in errors[0], errors
    server.healthy()
    server.stop()


def case_targets():
    """One checkpoint of several target languages (>>de<< and >>fr<< tags) serves every target: /languages
    lists them under the source, as LibreTranslate does, each direction's text equals `translate
    --tgt-lang`, and a target it lacks is 400 naming the directions."""
    server = Server()
    languages = requests.get(server.url + "/languages", timeout=10).json()
    assert languages == [{"code": "en", "name": "English", "targets": ["de", "fr"]}], languages
    lines = dev_lines(12)
    texts = {}
    for target in ("de", "fr"):
        texts[target] = offline(lines, "--tgt-lang", target)
        assert post(server, "/translate", {"q": lines, "source": "en", "target": target})["translatedText"] == texts[target]
    answer = post(server, "/translate", {"q": "x", "source": "en", "target": "it"}, status=400)
    assert "en-de, en-fr" in answer["error"], answer
    server.stop()
    # Its tags were given by hand, so it holds no language identifier: --retry-off-target would do
    # nothing, and the server refuses to start, in one line, as translate refuses it.
    started = subprocess.run([ARGS.trafo, "serve", "--port", "0", "--checkpoint", ARGS.checkpoint, "--retry-off-target",
                              "4"] + DECODING, capture_output=True, text=True, timeout=120)
    assert started.returncode == 2, (started.returncode, started.stderr)
    assert started.stderr.splitlines()[-1].startswith("trafo: error: --retry-off-target has nothing to check"), started.stderr


def case_translate_auto():
    """`trafo translate --src-lang auto` with an en-de and a de-en checkpoint: each line goes to the
    checkpoint of its language, and gets that checkpoint's own translation; a line in a third
    language is a one-line error, or with --skip-invalid an empty line."""
    toy = os.path.dirname(ARGS.dev)
    de_en = os.path.join(ARGS.workdir, "de-en")
    trained = subprocess.run([ARGS.trafo, "train", "--data-dir", toy, "--src-lang", "de", "--tgt-lang", "en", "--run-dir",
                              de_en, "--d-model", "32", "--heads", "2", "--encoder-layers", "1", "--decoder-layers", "1",
                              "--d-ff", "64", "--vocab-size", "400", "--threads", "1", "--max-steps", "5",
                              "--valid-every", "5", "--early-stopping", "0"], capture_output=True, text=True, timeout=600)
    assert trained.returncode == 0, trained.stderr
    de_en_checkpoint = os.path.join(de_en, "checkpoint-best.pt")
    english = dev_lines(4)
    with open(os.path.join(toy, "dev.de"), encoding="utf-8") as f:
        german = f.read().splitlines()[10:14]
    mixed = [english[0], german[0], english[1], "", german[1], english[2], german[2], english[3], german[3]]

    def translate(lines, *extra):
        return subprocess.run([ARGS.trafo, "translate", "--checkpoint", ARGS.checkpoint, "--checkpoint", de_en_checkpoint]
                              + DECODING + list(extra), input="".join(l + "\n" for l in lines), capture_output=True,
                              text=True, timeout=300)

    routed = translate(mixed, "--src-lang", "auto")
    assert routed.returncode == 0, routed.stderr
    from_german = subprocess.run([ARGS.trafo, "translate", "--checkpoint", de_en_checkpoint] + DECODING,
                                 input="".join(l + "\n" for l in german), capture_output=True, text=True, timeout=300)
    expected = {line: out for line, out in zip(english, offline(english))}
    expected.update(zip(german, from_german.stdout.splitlines()))
    expected[""] = ""
    assert routed.stdout.splitlines() == [expected[line] for line in mixed], (routed.stdout, expected)
    # A code picks its checkpoint.
    assert translate(german, "--src-lang", "de").stdout == from_german.stdout
    refused = translate(english[:1] + [FRENCH], "--src-lang", "auto")
    assert refused.returncode == 2 and refused.stderr.splitlines()[-1].startswith("trafo: error: "), refused.stderr
    assert "line 2 is in fr" in refused.stderr, refused.stderr
    skipped = translate(english[:1] + [FRENCH], "--src-lang", "auto", "--skip-invalid")
    assert skipped.returncode == 0 and skipped.stdout.splitlines() == [expected[english[0]], ""], skipped.stdout
    assert translate(german, "--src-lang", "it").returncode == 2


def post_file(server, name, data, status=200, **fields):
    """POST /translate_file as a browser sends it: a multipart form with the file and its name."""
    answer = requests.post(server.url + "/translate_file", files={"file": (name, data)},
                           data=dict({"source": "en", "target": "de"}, **fields), timeout=300)
    assert answer.status_code == status, "%s: %d %s" % (name, answer.status_code, answer.text)
    return answer.json()


def case_documents():
    """Documents through /translate_file: each comes back whole, as `trafo translate` translates it
    offline, and opens in LibreOffice; bad files get a 4xx naming the cause, and the server stays up."""
    server = Server("--max-file-bytes", "1000000")
    served, originals = [], []
    for name in sorted(os.listdir(DOCUMENTS)):
        if name.endswith(".py"):
            continue
        path = os.path.join(DOCUMENTS, name)
        with open(path, "rb") as f:
            data = f.read()
        url = post_file(server, name, data)["translatedFileUrl"]
        assert re.fullmatch(r"http://127\.0\.0\.1:%d/download_file/[0-9a-f]{32}\.%s" % (server.port, re.escape(name)), url), url
        download = requests.get(url, timeout=60)
        assert download.status_code == 200 and "attachment" in download.headers["Content-Disposition"], download.headers
        kept = os.path.join(ARGS.workdir, "served-" + name)
        with open(kept, "wb") as f:
            f.write(download.content)
        offline_copy = os.path.join(ARGS.workdir, "offline-" + name)
        result = subprocess.run([ARGS.trafo, "translate", "--checkpoint", ARGS.checkpoint, "--input", path, "--output",
                                 offline_copy] + DECODING, capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stderr
        # Served = offline, part by part; every other entry as it was.
        assert document_check.text_of(kept) == document_check.text_of(offline_copy), name
        problems = document_check.compare(path, kept)
        assert not problems, (name, problems)
        assert document_check.text_of(kept) != document_check.text_of(path), name + ": nothing was translated"
        served.append(kept)
        originals.append(path)
    failed = document_check.open_in_libreoffice(served, ARGS.workdir)
    assert not failed, failed
    # A text file: its lines, as offline; source "auto" finds English.
    lines = dev_lines(5)
    text = post_file(server, "notes.txt", ("\n".join(lines) + "\n").encode(), source="auto")["translatedFileUrl"]
    assert requests.get(text, timeout=60).text == "".join(t + "\n" for t in offline(lines))

    # Bad files: a zip bomb (half a megabyte that unpacks to 520 MiB), a .docx that is not a zip, an
    # unknown extension, a file over the limit, "auto" on text of no served language.
    bomb = os.path.join(ARGS.workdir, "bomb.docx")
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as z:
        with z.open("word/document.xml", "w", force_zip64=True) as entry:
            chunk = b" " * (1 << 20)
            for _ in range(520):
                entry.write(chunk)
    with open(bomb, "rb") as f:
        bomb_data = f.read()
    assert len(bomb_data) < 1000000, len(bomb_data)
    assert "zip bomb" in post_file(server, "bomb.docx", bomb_data, status=413)["error"]
    assert "not a zip archive" in post_file(server, "letter.docx", b"Dear friend, this is no zip.", status=400)["error"]
    assert ".docx" in post_file(server, "scan.pdf", b"%PDF-1.4", status=400)["error"]
    assert "at most 1000000" in post_file(server, "big.txt", b"word " * 250000, status=413)["error"]
    assert "fr" in post_file(server, "lettre.txt", FRENCH.encode(), status=400, source="auto")["error"]
    missing = requests.post(server.url + "/translate_file", data={"source": "en", "target": "de"}, timeout=30)
    assert missing.status_code == 400 and "file" in missing.json()["error"], missing.text
    assert requests.get(server.url + "/download_file/0123.x.docx", timeout=30).status_code == 404
    server.healthy()


def case_page():
    """GET / in headless Chromium: the page loads its settings and languages, translates a sentence
    typed into it as the API does (source auto too), and translates a file; a screenshot is kept."""
    import browser  # noqa: E402  (tests/browser.py: needs websocket-client)
    server = Server()
    settings = requests.get(server.url + "/frontend/settings", timeout=30).json()
    assert settings["filesTranslation"] and ".docx" in settings["supportedFilesFormat"], settings
    assert settings["language"]["target"]["code"] == "de", settings
    sentence = dev_lines(1)[0]
    expected = offline([sentence])[0]
    with browser.Browser(ARGS.workdir) as page:
        page.navigate(server.url + "/")
        page.wait_for("document.body.dataset.state === 'ready'")
        assert page.evaluate("[...document.getElementById('source').options].map((o) => o.value)") == ["auto", "en"]
        page.type_text("#text", sentence)
        page.wait_for("document.body.dataset.state === 'translated'", timeout=60)
        assert page.evaluate("document.getElementById('output').textContent") == expected
        assert "en" in page.evaluate("document.getElementById('detected').textContent")
        page.set_file("#file", os.path.join(DOCUMENTS, "word.docx"))
        page.click("#translate-file")
        href = page.wait_for("document.body.dataset.fileState === 'translated' && "
                             "document.getElementById('file-result').href", timeout=120)
        assert not document_check.compare(os.path.join(DOCUMENTS, "word.docx"), io.BytesIO(requests.get(href, timeout=60).content))
        page.command("Emulation.setDeviceMetricsOverride", {"width": 1000, "height": 820, "deviceScaleFactor": 1, "mobile": False})
        os.makedirs(ARGS.artifacts, exist_ok=True)
        page.screenshot(os.path.join(ARGS.artifacts, "serve-page.png"))
        assert not page.errors, page.errors
    assert os.path.getsize(os.path.join(ARGS.artifacts, "serve-page.png")) > 10000


CASES = {name[len("case_"):]: f for name, f in globals().items() if name.startswith("case_")}

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("case", choices=sorted(CASES))
    parser.add_argument("--trafo", required=True)
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--dev", required=True)
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--artifacts", help="where a case keeps what a person may look at (default: --workdir)")
    ARGS = parser.parse_args()
    ARGS.artifacts = ARGS.artifacts or ARGS.workdir
    CASES[ARGS.case]()
    print("ok")
