"""Processes of the routing experiment (routing.py): cache_server replicas
whose policy file is rewritten while they run, one `cache_client load`, and
what their /metrics and load report say. Every process started here is
registered and killed (SIGCONT first) on every way out: cleanup()."""

import json
import os
import re
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request

SERVICE = "cache.v1.CacheService"
GET = f"/{SERVICE}/Get"
STORE = f"/{SERVICE}/Store"
UNARY = (GET, STORE)

_LIVE = []  # every Popen not yet reaped


def cleanup():
    """Kills every process this module started that still runs."""
    while _LIVE:
        proc = _LIVE.pop()
        if proc.poll() is None:
            try:
                proc.send_signal(signal.SIGCONT)
                proc.kill()
            except ProcessLookupError:
                pass
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass


def _spawn(argv, **kwargs):
    proc = subprocess.Popen(argv, **kwargs)
    _LIVE.append(proc)
    return proc


def _reap(proc):
    if proc in _LIVE:
        _LIVE.remove(proc)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_atomically(path, data):
    """Writes JSON `data` to `path` by renaming a complete file over it, so
    that a watcher never reads half a file."""
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(data, f)
    os.replace(tmp, path)


def scrape(port, timeout=0.5):
    """{(family, frozenset(labels.items())): value} of a /metrics page, or
    None when it does not answer."""
    try:
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics",
                                      timeout=timeout).read().decode()
    except (OSError, urllib.error.URLError):
        return None
    samples = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$', line)
        if not m:
            continue
        labels = frozenset(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(3) or ""))
        samples[(m.group(1), labels)] = float(m.group(4))
    return samples


def total(samples, family, **want):
    """The sum of `family`'s samples whose labels include `want`."""
    if not samples:
        return 0.0
    return sum(v for (name, labels), v in samples.items()
               if name == family and all((k, w) in labels for k, w in want.items()))


class Replica:
    """One cache_server on a fixed port, its policy file and its metrics.
    Counters of earlier incarnations (before a restart) are kept in
    `banked`, so counts() covers the replica's whole life."""

    def __init__(self, binary, workdir, index):
        self.binary, self.index = binary, index
        self.port, self.metrics_port = free_port(), free_port()
        self.policy = os.path.join(workdir, f"server{index}.json")
        self.proc, self.stopped, self.banked = None, False, {}
        self.log = os.path.join(workdir, f"server{index}.log")

    @property
    def address(self):
        return f"127.0.0.1:{self.port}"

    def set_policy(self, policy):
        """Rewrites the policy file; a running server reloads it."""
        write_atomically(self.policy, policy)

    def start(self, policy=None):
        if policy is not None:
            self.set_policy(policy)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with open(self.log, "a") as err:
                proc = _spawn([self.binary, f"--port={self.port}", f"--policy={self.policy}",
                               "--grace_period=2s", f"--metrics_port={self.metrics_port}"],
                              stdout=subprocess.PIPE, stderr=err, text=True)
            line = proc.stdout.readline()
            if line.startswith("listening on"):
                self.proc = proc
                return
            proc.wait()
            _reap(proc)
            time.sleep(0.05)  # the port is still held: try again
        raise RuntimeError(f"replica {self.index} did not start on port {self.port} "
                           f"(see {self.log})")

    def counts(self):
        """The replica's counters now plus those of earlier incarnations:
        {(method, "attempts"|"retries"|"rejected"|code): n}; None when it
        does not answer (stopped, down)."""
        if self.stopped or self.proc is None or self.proc.poll() is not None:
            return None
        samples = scrape(self.metrics_port)
        if samples is None:
            return None
        now = {}
        for method in UNARY:
            now[(method, "attempts")] = total(samples, "cache_server_attempts_received_total",
                                              grpc_method=method)
            now[(method, "retries")] = total(samples, "cache_server_retries_received_total",
                                             grpc_method=method)
            now[(method, "rejected")] = total(samples, "grpc_resilience_server_rejections_total",
                                              grpc_method=method)
        return {k: v + self.banked.get(k, 0) for k, v in now.items()}

    def stop(self):
        """SIGSTOP: the process holds its connections and answers nothing."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGSTOP)
            self.stopped = True

    def cont(self):
        if self.proc and self.proc.poll() is None and self.stopped:
            self.proc.send_signal(signal.SIGCONT)
        self.stopped = False

    def term_and_restart(self):
        """The server's drain (SIGTERM: NOT_SERVING, then refusals, then
        exit), counters banked from its last scrape, then the same port
        again. Returns the seconds it took to exit."""
        start = time.monotonic()
        last = self.counts()
        self.proc.send_signal(signal.SIGTERM)
        while self.proc.poll() is None and time.monotonic() - start < 15:
            last = self.counts() or last
            time.sleep(0.05)
        took = time.monotonic() - start
        self.kill()
        if last:
            self.banked = dict(last)
        self.start()
        return took

    def kill(self):
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.send_signal(signal.SIGCONT)
                self.proc.kill()
            self.proc.wait()
            _reap(self.proc)
        self.stopped = False


def preflight(client_binary, flag, path):
    """(refusal, warnings): cache_client refuses a file it cannot load with
    exit status 2 before calling anything (refusal: its message, else None);
    warnings: the lines it printed about a file it took."""
    r = subprocess.run([client_binary, "--target=127.0.0.1:1", f"{flag}={path}",
                        "--deadline=0.2s", "get", "k"],
                       capture_output=True, text=True, timeout=30)
    if r.returncode == 2:
        return (r.stderr.strip() or r.stdout.strip() or "exit status 2").splitlines()[0], []
    return None, [l for l in r.stderr.splitlines() if "warning" in l]


class Client:
    """`cache_client load` over the three replicas. With a library policy,
    its /metrics (scraped at events) and the admin endpoint are on."""

    def __init__(self, binary, flag, config_path, target, seconds, extra_args, log):
        self.library = flag == "--policy"
        self.metrics_port = free_port() if self.library else None
        argv = [binary, f"--target={target}", f"{flag}={config_path}", "--deadline=1s"]
        if self.library:
            argv += [f"--metrics_port={self.metrics_port}", "--admin"]
        argv += ["load", f"--duration={seconds}s", "--calls=0"] + list(extra_args)
        self.seconds, self.target, self.log = seconds, target, log
        self.started = time.monotonic()
        self.proc = _spawn(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.out = self.err = ""

    def elapsed(self):
        return time.monotonic() - self.started

    def wait(self):
        """Waits for the load's end (bounded); its report, parsed."""
        try:
            self.out, self.err = self.proc.communicate(timeout=self.seconds + 30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.out, self.err = self.proc.communicate()
            raise RuntimeError(f"cache_client did not end within {self.seconds + 30:.0f} s")
        finally:
            _reap(self.proc)
        with open(self.log, "w") as f:
            f.write(self.out + "\n--- stderr ---\n" + self.err)
        return parse_load(self.out, self.err)

    def calls_so_far(self):
        """{code: calls} of Get and Store so far (library configurations)."""
        samples = scrape(self.metrics_port) if self.library else None
        if samples is None:
            return None
        codes = {}
        for (name, labels), v in samples.items():
            if name == "grpc_resilience_client_calls_total":
                d = dict(labels)
                if d.get("grpc_method") in UNARY:
                    codes[d.get("grpc_code")] = codes.get(d.get("grpc_code"), 0) + v
        return codes

    def force_open(self, endpoint, method):
        """The admin endpoint's force_open of `method`'s breaker for
        `endpoint`; its JSON answer (or the error)."""
        query = urllib.parse.urlencode({"channel": self.target, "method": method,
                                        "command": "force_open", "endpoint": endpoint})
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.metrics_port}/admin/breaker?{query}", method="POST",
            headers={"X-Resilience-Admin": "1"})
        try:
            return json.loads(urllib.request.urlopen(request, timeout=2).read().decode())
        except urllib.error.HTTPError as e:
            return {"applied": False, "http": e.code, "body": e.read().decode()[:300]}
        except OSError as e:
            return {"applied": False, "error": str(e)}


def parse_load(out, err):
    m = re.search(r"calls: (\d+) in ([\d.]+) s", out)
    if not m:
        raise RuntimeError(f"cache_client said: {out.strip()}\n{err.strip()[-2000:]}")
    codes = {c: int(n) for c, n in re.findall(r"^  ([A-Z_]+)\s+(\d+)$", out, re.M)}
    lat = dict(re.findall(r"(p50|p90|p99|max) ([\d.]+) ms", out))
    row = {"calls": int(m.group(1)), "seconds": float(m.group(2)), "codes": codes,
           "p50_ms": float(lat["p50"]) if "p50" in lat else None,
           "p99_ms": float(lat["p99"]) if "p99" in lat else None}
    lib = re.search(r"client: (\d+) attempts rejected locally, (\d+) retries"
                    r"(?:, (\d+) attempts timed out, (\d+) retries refused by the budget)?", out)
    if lib:
        row["rejected_locally"] = int(lib.group(1))
        row["client_retries"] = int(lib.group(2))
        if lib.group(3) is not None:
            row["attempt_timeouts"] = int(lib.group(3))
            row["retries_refused_budget"] = int(lib.group(4))
    return row

