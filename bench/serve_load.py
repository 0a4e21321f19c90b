"""Load for `trafo serve` (bench/serve.sh), and a minimal CTranslate2 server to compare with.

    serve_load.py load --url URL --sentences FILE [--clients 64] [--source en --target de]
        Sends every line of FILE as its own request from CLIENTS concurrent clients (LibreTranslate's
        POST /translate, JSON), each client taking the next unsent line. Prints one JSON object:
        sentences, seconds, sentences_per_s, latency p50/p95/p99 (ms), failures.
    serve_load.py lone --url URL --sentence TEXT [--repeat 20]
        One request at a time; prints the p50 latency (ms), and, for a trafo server, the median
        decoding time of the same requests from its /metrics (trafo_decoding_seconds_total).
    serve_load.py ct2-server --model DIR --sp MODEL --port PORT [--threads 2]
        Serves a CTranslate2 model folder with LibreTranslate's POST /translate (one sentence a
        request, greedy), on 127.0.0.1: Python's threading HTTP server, no batching across requests.
    serve_load.py soak --url URL --pid PID --sentences FILE [--minutes 5] [--clients 64] [--hostile 8]
                       [--read-timeout 5] [--max-request-bytes 1048576] [--sigterm-at-end]
        For MINUTES, CLIENTS clients send good requests (their answers checked against the first answer
        for the same line), malformed ones and ones that disconnect mid-request; HOSTILE clients, a
        request every few seconds, connect and say nothing, drip a head a byte at a time (408), send
        chunked or gzip bodies past the limit (411, 415) or a Content-Length past it (413), or never read
        their answer; /health must answer 200 within 1 s every 0.5 s. Samples the server's VmRSS. With
        --sigterm-at-end, sends SIGTERM with good requests in flight: each must be answered 200 or 503.
        Prints one JSON object: requests of each kind, failures, /health misses, RSS after the first
        minute and at the end, and each minute's (MB). (bench/serve_soak.sh runs it.)
    serve_load.py verdict --result JSON --exit-code RC
        One line from a soak's JSON and the server's exit status; exits 1 on FAIL.
"""

import argparse
import gzip
import json
import os
import random
import re
import signal
import socket
import statistics
import sys
import threading
import time
import urllib.parse
import urllib.request


def post_json(url, body, timeout=120):
    request = urllib.request.Request(url + "/translate", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout) as answer:
        return json.loads(answer.read())


def post_bytes(body, headers=b"", length=None):
    """POST /translate with a JSON BODY, as bytes; LENGTH: its Content-Length, if not BODY's."""
    return (b"POST /translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n%sContent-Length: %d\r\n\r\n%s"
            % (headers, len(body) if length is None else length, body))


def query(line):
    return json.dumps({"q": line, "source": "en", "target": "de"}).encode()


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100.0 * (len(ordered) - 1))))]


def load(args):
    """CLIENTS keep-alive connections on one asyncio loop: the load itself costs little CPU, which
    matters on a machine whose cores the server uses too."""
    import asyncio
    from urllib.parse import urlparse

    with open(args.sentences, encoding="utf-8") as f:
        lines = f.read().splitlines()
    where = urlparse(args.url)
    latencies, failures = [], []
    pending = list(range(len(lines)))
    pending.reverse()

    async def client():
        connection = None
        while pending:
            i = pending.pop()
            body = json.dumps({"q": lines[i], "source": args.source, "target": args.target}).encode()
            started = time.perf_counter()
            try:
                if connection is None:
                    connection = await asyncio.open_connection(where.hostname, where.port)
                reader, writer = connection
                writer.write(post_bytes(body))
                head = await reader.readuntil(b"\r\n\r\n")
                length = int(re.search(rb"(?i)content-length: *(\d+)", head).group(1))
                answer = await reader.readexactly(length)
            except (OSError, asyncio.IncompleteReadError) as error:
                failures.append(repr(error))
                connection = None
                continue
            if not head.startswith(b"HTTP/1.1 200") or "translatedText" not in json.loads(answer):
                failures.append(head[:20])
                continue
            latencies.append(time.perf_counter() - started)
        if connection is not None:
            connection[1].close()

    async def run():
        await asyncio.gather(*(client() for _ in range(args.clients)))

    started = time.perf_counter()
    asyncio.run(run())
    seconds = time.perf_counter() - started
    print(json.dumps({"sentences": len(lines), "clients": args.clients, "seconds": round(seconds, 3),
                      "sentences_per_s": round(len(latencies) / seconds, 2),
                      "p50_ms": round(percentile(latencies, 50) * 1e3, 1),
                      "p95_ms": round(percentile(latencies, 95) * 1e3, 1),
                      "p99_ms": round(percentile(latencies, 99) * 1e3, 1), "failures": len(failures)}))


def decoding_seconds(url):
    try:
        with urllib.request.urlopen(url + "/metrics", timeout=10) as answer:
            text = answer.read().decode()
    except Exception:  # noqa: BLE001 - not a trafo server
        return None
    match = re.search(r"^trafo_decoding_seconds_total (\S+)$", text, re.M)
    return float(match.group(1)) if match else None


def lone(args):
    latencies, decoding = [], []
    post_json(args.url, {"q": args.sentence, "source": args.source, "target": args.target})  # warm-up
    for _ in range(args.repeat):
        before = decoding_seconds(args.url)
        started = time.perf_counter()
        post_json(args.url, {"q": args.sentence, "source": args.source, "target": args.target})
        latencies.append(time.perf_counter() - started)
        after = decoding_seconds(args.url)
        if before is not None and after is not None:
            decoding.append(after - before)
    result = {"p50_ms": round(statistics.median(latencies) * 1e3, 2)}
    if decoding:
        result["decoding_p50_ms"] = round(statistics.median(decoding) * 1e3, 2)
        result["ratio"] = round(statistics.median(latencies) / statistics.median(decoding), 3)
    print(json.dumps(result))


def ct2_server(args):
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    import ctranslate2
    import sentencepiece

    translator = ctranslate2.Translator(args.model, device="cpu", intra_threads=args.threads)
    sp = sentencepiece.SentencePieceProcessor(model_file=args.sp)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *_):
            pass

        def do_POST(self):  # noqa: N802 - the library's name
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            pieces = sp.encode(body["q"], out_type=str)
            result = translator.translate_batch([pieces], beam_size=1, max_decoding_length=256)
            text = sp.decode(result[0].hypotheses[0])
            answer = json.dumps({"translatedText": text}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

    class Server(ThreadingHTTPServer):
        request_queue_size = 1024  # the listen backlog: 64 clients connect at once

    server = Server(("127.0.0.1", args.port), Handler)
    print("listening", flush=True)
    server.serve_forever()


def rss_mb(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except FileNotFoundError:  # the server is gone
        pass
    return 0.0


def exchange(where, request, timeout=30):
    """REQUEST on a connection of its own; the answer's first bytes. A body refused before it has
    all come makes the send fail once the server stops reading: the answer is read all the same."""
    with socket.create_connection(where, timeout=timeout) as s:
        try:
            s.sendall(request)
        except OSError:
            pass
        return s.recv(100)


def expect(status, answer):
    return None if answer.startswith(b"HTTP/1.1 %d " % status) else "answered %r" % answer[:40]


def silent(where, wait):
    """Connects and says nothing: the server must close the connection, unanswered."""
    with socket.create_connection(where, timeout=wait) as s:
        answer = s.recv(100)
    return None if answer == b"" else "answered %r" % answer[:40]


def drip(where, wait):
    """Sends a request's head a byte every 0.25 s: it cannot arrive whole in time, so 408."""
    with socket.create_connection(where, timeout=0.25) as s:
        for byte in post_bytes(b"", length=40):
            s.send(bytes([byte]))
            try:
                return expect(408, s.recv(100))
            except socket.timeout:
                continue
        s.settimeout(wait)
        return expect(408, s.recv(100))


def unread(where, request, hold):
    """Sends a good request on a small receive window, and never reads its answer."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
        s.connect(where)
        s.sendall(request)
        time.sleep(hold)


def hostile_requests(where, args, lines):
    """What the hostile clients do, each a function of a random generator that returns what went wrong,
    or None. Bodies past --max-request-bytes are made once: chunked (411), a gzip body that unpacks to
    64 times the limit (415) and a Content-Length of 1,024 times it (413)."""
    limit, wait = args.max_request_bytes, args.read_timeout + 5
    chunk = b"a" * 65536
    chunked = (b"POST /translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
               b"Transfer-Encoding: chunked\r\n\r\n" + (b"10000\r\n%s\r\n" % chunk) * (limit // len(chunk) + 2)
               + b"0\r\n\r\n")
    gzipped = post_bytes(gzip.compress(b'{"q": "%s"}' % (b"a" * 64 * limit)), b"Content-Encoding: gzip\r\n")
    too_long = post_bytes(b'{"q": "' + b"a" * 1000, length=1024 * limit)
    many = post_bytes(json.dumps({"q": lines[:20], "source": "en", "target": "de"}).encode())
    return {"silent": lambda rng: silent(where, wait), "drip": lambda rng: drip(where, wait),
            "chunked": lambda rng: expect(411, exchange(where, chunked)),
            "gzip": lambda rng: expect(415, exchange(where, gzipped)),
            "too_long": lambda rng: expect(413, exchange(where, too_long)),
            "unread": lambda rng: unread(where, many, args.read_timeout + 1)}


class Tally:
    """Requests of each kind, and what went wrong, from many threads."""

    def __init__(self):
        self.lock = threading.Lock()
        self.counts, self.failures = {}, []

    def record(self, kind, failure):
        with self.lock:
            self.counts[kind] = self.counts.get(kind, 0) + 1
            if failure:
                self.failures.append("%s: %s" % (kind, failure))


def client(seed, kinds, weights, pause, end, tally):
    """Requests of KINDS drawn by WEIGHTS until END, each followed by up to PAUSE seconds of rest."""
    rng = random.Random(seed)
    while time.time() < end:
        kind = rng.choices(list(kinds), weights)[0]
        try:
            failure = kinds[kind](rng)
        except Exception as error:  # noqa: BLE001 - a failure of that request
            failure = repr(error)
        tally.record(kind, failure)
        time.sleep(pause * rng.random())


def health_probe(url, stop, tally):
    """Every 0.5 s until STOP: /health must answer 200 within 1 s."""
    while not stop.wait(0.5):
        started, answered = time.time(), None
        try:
            with urllib.request.urlopen(url + "/health", timeout=1) as answer:
                answered = answer.status
        except Exception:  # noqa: BLE001 - a miss
            pass
        late = time.time() - started > 1
        tally.record("health", None if answered == 200 and not late else "status %s, late %s" % (answered, late))


def sigterm_under_load(where, args, lines, expected):
    """Good requests sent whole, then SIGTERM while they are in flight: each must be answered 503, or
    200 with its line's first answer."""
    outcome, failures, sent = {"sigterm_sent": 0, "sigterm_200": 0, "sigterm_503": 0}, [], []
    try:
        for i in random.Random(0).choices(range(len(lines)), k=4 * args.clients):
            s = socket.create_connection(where, timeout=args.request_timeout + 10)
            s.sendall(post_bytes(query(lines[i]), b"Connection: close\r\n"))
            sent.append((i, s))
        os.kill(args.pid, signal.SIGTERM)
    except OSError as error:  # the server is gone
        failures.append("sigterm: %r" % error)
    for i, s in sent:
        outcome["sigterm_sent"] += 1
        try:
            with s:
                head, _, body = b"".join(iter(lambda: s.recv(65536), b"")).partition(b"\r\n\r\n")
            text = json.loads(body).get("translatedText") if head.startswith(b"HTTP/1.1 200 ") else None
        except (OSError, ValueError) as error:
            failures.append("sigterm: line %d: %r" % (i, error))
            continue
        if head.startswith(b"HTTP/1.1 503 "):
            outcome["sigterm_503"] += 1
        elif text is not None and expected.setdefault(i, text) == text:
            outcome["sigterm_200"] += 1
        else:
            failures.append("sigterm: line %d answered %r" % (i, head[:40]))
    return outcome, failures


def good_requests(where, args, lines, expected, lock):
    """What the ordinary clients do: good requests (their answers checked against the first answer
    for the same line), malformed ones (400) and ones that disconnect mid-body."""
    def good(rng):
        i = rng.randrange(len(lines))
        text = post_json(args.url, {"q": lines[i], "source": "en", "target": "de"})["translatedText"]
        with lock:
            return None if expected.setdefault(i, text) == text else "line %d changed" % i

    def dropped(rng):
        with socket.create_connection(where, timeout=30) as s:
            s.sendall(post_bytes(b'{"q": ', length=500))

    malformed = post_bytes(b'{"q": ["a", 3', b"Connection: close\r\n")
    return {"good": good, "bad": lambda rng: expect(400, exchange(where, malformed)), "dropped": dropped}


def rss_summary(samples):
    """The median RSS of each minute: a plateau is what "flat after warm-up" means; a slow leak rises
    minute after minute. (The server hands freed pages back every 10 s, so single samples jump.)"""
    by_minute = {}
    for at, mb in samples:
        by_minute.setdefault(int(at // 60), []).append(mb)
    after_warm = statistics.median(by_minute.get(1) or [samples[0][1]])  # the second minute
    last = statistics.median([mb for at, mb in samples if at >= samples[-1][0] - 60])
    return {"rss_mb_after_warm_up": round(after_warm, 1), "rss_mb_at_end": round(last, 1),
            "rss_growth_pct": round(100 * (last / after_warm - 1), 2) if after_warm else 100.0,
            "rss_mb_by_minute": [round(statistics.median(by_minute[m]), 1) for m in sorted(by_minute)]}


def soak(args):
    with open(args.sentences, encoding="utf-8") as f:
        lines = f.read().splitlines()
    where = (urllib.parse.urlparse(args.url).hostname, urllib.parse.urlparse(args.url).port)
    expected, tally, health, stop = {}, Tally(), Tally(), threading.Event()
    end = time.time() + args.minutes * 60
    ordinary = good_requests(where, args, lines, expected, tally.lock)
    hostile = hostile_requests(where, args, lines)
    threads = [threading.Thread(target=client, args=(seed, ordinary, [8, 1, 1], 0, end, tally))
               for seed in range(args.clients)]
    threads += [threading.Thread(target=client, args=(-seed, hostile, [1] * len(hostile), 1, end, tally))
                for seed in range(1, args.hostile + 1)]
    threads.append(threading.Thread(target=health_probe, args=(args.url, stop, health)))
    for t in threads:
        t.start()
    samples, started = [], time.time()
    while any(t.is_alive() for t in threads[:-1]):
        samples.append((time.time() - started, rss_mb(args.pid)))
        time.sleep(2)
    stop.set()
    threads[-1].join()
    result = {"minutes": args.minutes, "requests": tally.counts, "good": tally.counts.get("good", 0),
              "health_probes": health.counts.get("health", 0), "health_misses": len(health.failures)}
    failures = tally.failures + health.failures
    if args.sigterm_at_end:
        outcome, more = sigterm_under_load(where, args, lines, expected)
        result.update(outcome)
        failures += more
    result.update({"failures": len(failures), "first_failures": failures[:5]})
    result.update(rss_summary(samples))
    print(json.dumps(result))


def verdict(args):
    """One line from a soak's JSON and the server's exit status: PASS when no request failed, /health
    never missed, RSS at the end is within 10% of the second minute's and the server exited 0."""
    r = json.loads(args.result)
    passed = r["failures"] == 0 and r["health_misses"] == 0 and r["rss_growth_pct"] <= 10 and args.exit_code == 0
    print("%s: %g minutes, %d good requests, %d failures, /health missed %d of %d, RSS %.1f MB after the first "
          "minute and %.1f MB at the end (%+.2f%%); SIGTERM with %d requests in flight: %d answered 200, %d 503; "
          "exit %d" % ("PASS" if passed else "FAIL", r["minutes"], r["good"], r["failures"], r["health_misses"],
                       r["health_probes"], r["rss_mb_after_warm_up"], r["rss_mb_at_end"], r["rss_growth_pct"],
                       r.get("sigterm_sent", 0), r.get("sigterm_200", 0), r.get("sigterm_503", 0), args.exit_code))
    return 0 if passed else 1


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("what", choices=["load", "lone", "ct2-server", "soak", "verdict"])
    parser.add_argument("--url")
    parser.add_argument("--sentences")
    parser.add_argument("--sentence")
    parser.add_argument("--clients", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--source", default="en")
    parser.add_argument("--target", default="de")
    parser.add_argument("--model")
    parser.add_argument("--sp")
    parser.add_argument("--port", type=int)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--pid", type=int)
    parser.add_argument("--minutes", type=float, default=5)
    parser.add_argument("--hostile", type=int, default=8)
    parser.add_argument("--read-timeout", type=float, default=5)
    parser.add_argument("--request-timeout", type=float, default=60)
    parser.add_argument("--max-request-bytes", type=int, default=1048576)
    parser.add_argument("--sigterm-at-end", action="store_true")
    parser.add_argument("--result")
    parser.add_argument("--exit-code", type=int, default=0)
    args = parser.parse_args()
    return {"load": load, "lone": lone, "ct2-server": ct2_server, "soak": soak, "verdict": verdict}[args.what](args)


if __name__ == "__main__":
    sys.exit(main())
