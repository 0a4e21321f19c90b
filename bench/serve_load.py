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
    serve_load.py soak --url URL --pid PID --sentences FILE [--minutes 5] [--clients 16]
        Good requests (their answers checked against the first answer for the same line), malformed
        ones and clients that disconnect mid-request, for MINUTES; samples the server's VmRSS.
        Prints failures of good requests, RSS after the first minute and at the end, and each minute's (MB).
"""

import argparse
import json
import random
import re
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
                writer.write(b"POST /translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                             b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
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
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return 0.0


def soak(args):
    with open(args.sentences, encoding="utf-8") as f:
        lines = f.read().splitlines()
    host, port = urllib.parse.urlparse(args.url).hostname, urllib.parse.urlparse(args.url).port
    expected, failures, counts = {}, [], {"good": 0, "bad": 0, "dropped": 0}
    lock = threading.Lock()
    end = time.time() + args.minutes * 60

    def client(seed):
        rng = random.Random(seed)
        while time.time() < end:
            roll = rng.random()
            try:
                if roll < 0.8:
                    i = rng.randrange(len(lines))
                    text = post_json(args.url, {"q": lines[i], "source": "en", "target": "de"})["translatedText"]
                    with lock:
                        counts["good"] += 1
                        if expected.setdefault(i, text) != text:
                            failures.append("line %d changed" % i)
                elif roll < 0.9:
                    body = b'{"q": ["a", 3'
                    with socket.create_connection((host, port), timeout=30) as s:
                        s.sendall(b"POST /translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                                  b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body))
                        answer = s.recv(100)
                    with lock:
                        counts["bad"] += 1
                        if not answer.startswith(b"HTTP/1.1 400"):
                            failures.append("bad request answered %r" % answer[:20])
                else:
                    with socket.create_connection((host, port), timeout=30) as s:
                        s.sendall(b"POST /translate HTTP/1.1\r\nContent-Length: 500\r\n\r\n{\"q\": ")
                    with lock:
                        counts["dropped"] += 1
            except Exception as error:  # noqa: BLE001 - a failed good request
                with lock:
                    failures.append(repr(error))

    samples = []
    threads = [threading.Thread(target=client, args=(seed,)) for seed in range(args.clients)]
    for t in threads:
        t.start()
    started = time.time()
    while any(t.is_alive() for t in threads):
        samples.append((time.time() - started, rss_mb(args.pid)))
        time.sleep(2)
    # The median RSS of each minute: a plateau is what "flat after warm-up" means; a slow leak rises
    # minute after minute. (The server hands freed pages back every 10 s, so single samples jump.)
    by_minute = {}
    for at, mb in samples:
        by_minute.setdefault(int(at // 60), []).append(mb)
    after_warm = by_minute.get(1) or [samples[0][1]]  # the second minute
    last = [mb for at, mb in samples if at >= samples[-1][0] - 60]
    print(json.dumps({"minutes": args.minutes, "requests": counts, "failures": len(failures),
                      "first_failures": failures[:5], "rss_mb_after_warm_up": round(statistics.median(after_warm), 1),
                      "rss_mb_at_end": round(statistics.median(last), 1),
                      "rss_growth_pct": round(100 * (statistics.median(last) / statistics.median(after_warm) - 1), 2),
                      "rss_mb_by_minute": [round(statistics.median(by_minute[m]), 1) for m in sorted(by_minute)]}))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("what", choices=["load", "lone", "ct2-server", "soak"])
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
    args = parser.parse_args()
    {"load": load, "lone": lone, "ct2-server": ct2_server, "soak": soak}[args.what](args)


if __name__ == "__main__":
    sys.exit(main())
