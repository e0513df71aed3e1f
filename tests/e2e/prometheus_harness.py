"""Runs cache_server, `cache_client load` and a real Prometheus that scrapes
both, as child processes, for tests/e2e/prometheus_scrape_test.py and
scripts/operator_view.sh. Python's standard library only.

Every child is started with PR_SET_PDEATHSIG (it is killed if this process
dies, even by SIGKILL) and is stopped by Processes.close(). Their output is
kept (a reader thread per pipe), so a test can wait for a line and print
everything on failure.
"""
import ctypes
import json
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

_PR_SET_PDEATHSIG = 1
# Resolved here, once: the child between fork and exec only calls it (no
# dynamic loading there, where another thread of ours may hold a lock).
try:
    _prctl = ctypes.CDLL(None, use_errno=True).prctl
except (OSError, AttributeError):
    _prctl = None


def _die_with_parent():
    """preexec_fn: SIGKILL this child when the process that started it dies."""
    if _prctl is not None:
        _prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)


def free_port():
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def find_prometheus(explicit=""):
    """The prometheus binary: `explicit`, on PATH, or Debian's; "" if none."""
    for candidate in (explicit, shutil.which("prometheus"), "/usr/bin/prometheus"):
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return ""


def find_promtool(prometheus):
    """promtool, from the same package as `prometheus`; "" if none."""
    beside = os.path.join(os.path.dirname(prometheus), "promtool") if prometheus else ""
    for candidate in (beside, shutil.which("promtool"), "/usr/bin/promtool"):
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return ""


class _Lines:
    """The lines a pipe has produced so far, read by a thread."""

    def __init__(self, stream):
        self._lines = []
        self._cond = threading.Condition()
        self._closed = False
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream):
        for line in iter(stream.readline, ""):
            with self._cond:
                self._lines.append(line.rstrip("\n"))
                self._cond.notify_all()
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        stream.close()

    def lines(self):
        with self._cond:
            return list(self._lines)

    def wait_for(self, predicate, timeout):
        """The first line satisfying `predicate`, or None after `timeout` s or at EOF."""
        deadline = time.monotonic() + timeout
        with self._cond:
            seen = 0
            while True:
                for line in self._lines[seen:]:
                    if predicate(line):
                        return line
                seen = len(self._lines)
                left = deadline - time.monotonic()
                if self._closed or left <= 0:
                    return None
                self._cond.wait(left)


class Child:
    """A started process with its stdout and stderr lines."""

    def __init__(self, name, argv, cwd=None):
        self.name = name
        self.argv = argv
        self.popen = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True, errors="replace",
                                      cwd=cwd, preexec_fn=_die_with_parent)
        self.stdout = _Lines(self.popen.stdout)
        self.stderr = _Lines(self.popen.stderr)

    def running(self):
        return self.popen.poll() is None

    def stop(self, sig=signal.SIGTERM, timeout=10):
        """Signals the process, waits up to `timeout` s, then kills it; its exit code."""
        if self.popen.poll() is None:
            try:
                self.popen.send_signal(sig)
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()
        return self.popen.returncode

    def output(self, last=40):
        """Its last lines of stdout and stderr, for a failure message."""
        out = self.stdout.lines()[-last:]
        err = self.stderr.lines()[-last:]
        return "\n".join(["--- %s stdout:" % self.name] + out +
                         ["--- %s stderr:" % self.name] + err)


class Processes:
    """The children of a run; close() stops every one (SIGTERM, then SIGKILL)."""

    def __init__(self):
        self.children = []

    def start(self, name, argv, cwd=None):
        child = Child(name, argv, cwd)
        self.children.append(child)
        return child

    def close(self):
        for child in reversed(self.children):
            child.stop(timeout=5)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


METRICS_LINE = "metrics on http://127.0.0.1:%d/metrics"


def start_cache_server(processes, binary, policy_path, metrics_port, port=0, name="cache_server",
                       timeout=15):
    """cache_server with `policy_path` and --metrics_port; (child, "host:port").

    Checks the first line on stdout ("listening on ...") and the line on
    stderr that says where the metrics are.
    """
    child = processes.start(name, [binary, "--port=%d" % port, "--policy=" + policy_path,
                                   "--metrics_port=%d" % metrics_port, "--grace_period=0s"])
    line = child.stdout.wait_for(lambda l: True, timeout)
    if line is None or not line.startswith("listening on "):
        raise RuntimeError("%s did not start: first line %r\n%s" % (name, line, child.output()))
    address = line[len("listening on "):]
    expected = "cache_server: " + METRICS_LINE % metrics_port
    if child.stderr.wait_for(lambda l: l.startswith(expected), timeout) is None:
        raise RuntimeError("%s did not say %r\n%s" % (name, expected, child.output()))
    return child, address


def start_load(processes, binary, target, policy_path, metrics_port, seconds, concurrency=1,
               extra=(), timeout=15):
    """`cache_client load` for up to `seconds` s with --metrics_port; the child."""
    argv = [binary, "--target=" + target, "--policy=" + policy_path,
            "--metrics_port=%d" % metrics_port, "load", "--calls=0",
            "--duration=%ds" % seconds, "--concurrency=%d" % concurrency, "--keys=100"]
    argv.extend(extra)
    child = processes.start("cache_client", argv)
    expected = "cache_client: " + METRICS_LINE % metrics_port
    if child.stderr.wait_for(lambda l: l.startswith(expected), timeout) is None:
        raise RuntimeError("cache_client did not say %r\n%s" % (expected, child.output()))
    return child


def write_prometheus_config(path, jobs, interval="1s"):
    """A configuration scraping each {job: "host:port"} every `interval`.

    YAML is a superset of JSON: the file is written as JSON.
    """
    config = {
        "global": {"scrape_interval": interval, "scrape_timeout": interval,
                   "evaluation_interval": interval},
        "scrape_configs": [{"job_name": job, "static_configs": [{"targets": [target]}]}
                           for job, target in sorted(jobs.items())],
    }
    with open(path, "w") as f:
        json.dump(config, f, indent=2)


def start_prometheus(processes, binary, workdir, jobs, port, timeout=30):
    """Our own Prometheus (not the Debian package's daemon), scraping `jobs`
    every second, storing in `workdir`, answering on 127.0.0.1:`port`;
    returns a PrometheusApi once it is ready."""
    config = os.path.join(workdir, "prometheus.yml")
    write_prometheus_config(config, jobs)
    child = processes.start("prometheus", [
        binary, "--config.file=" + config,
        "--storage.tsdb.path=" + os.path.join(workdir, "tsdb"),
        "--web.listen-address=127.0.0.1:%d" % port,
        "--storage.tsdb.retention.time=1d",
        "--log.level=warn",
    ], cwd=workdir)
    api = PrometheusApi("http://127.0.0.1:%d" % port, child)
    api.wait_ready(timeout)
    return api


class PrometheusApi:
    """Prometheus' HTTP API: /-/ready, /api/v1/query, query_range, targets."""

    def __init__(self, base, child=None):
        self.base = base
        self.child = child

    def _get(self, path, params=None, timeout=5):
        url = self.base + path
        if params:
            url += "?" + urllib.parse.urlencode(params)
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.read().decode("utf-8")

    def wait_ready(self, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.child is not None and not self.child.running():
                raise RuntimeError("prometheus exited\n" + self.child.output())
            try:
                self._get("/-/ready", timeout=1)
                return
            except (urllib.error.URLError, ConnectionError, OSError):
                time.sleep(0.2)
        raise RuntimeError("prometheus not ready after %d s\n%s" % (
            timeout, self.child.output() if self.child else ""))

    def _data(self, path, params):
        body = json.loads(self._get(path, params))
        if body.get("status") != "success":
            raise RuntimeError("%s %s: %s" % (path, params, body))
        return body["data"]

    def query(self, expr):
        """The instant vector of `expr`: [(labels, value)]."""
        data = self._data("/api/v1/query", {"query": expr})
        if data["resultType"] == "scalar":
            return [({}, float(data["result"][1]))]
        return [(r["metric"], float(r["value"][1])) for r in data["result"]]

    def value(self, expr):
        """The single value of `expr`, or None when it has no result."""
        result = self.query(expr)
        return result[0][1] if result else None

    def query_range(self, expr, start, end, step):
        """[(labels, [(t, value)])] of `expr` over [start, end] (Unix seconds)."""
        data = self._data("/api/v1/query_range",
                          {"query": expr, "start": "%.3f" % start, "end": "%.3f" % end,
                           "step": str(step)})
        return [(r["metric"], [(float(t), float(v)) for t, v in r["values"]])
                for r in data["result"]]

    def targets(self):
        """The active targets: [{"labels", "health", "lastError", "scrapeUrl", ...}]."""
        return self._data("/api/v1/targets", {"state": "active"})["activeTargets"]

    def all_targets_up(self, count):
        """Whether there are `count` active targets, all up with no scrape
        error (Prometheus' service discovery hands it the targets about 5 s
        after it starts; before that the list is empty)."""
        targets = self.targets()
        return len(targets) == count and all(
            t["health"] == "up" and t["lastError"] == "" for t in targets)

    def wait_until(self, condition, timeout, interval=0.25):
        """Calls `condition()` until it returns a true value or `timeout` s pass;
        its last value."""
        deadline = time.monotonic() + timeout
        while True:
            result = condition()
            if result or time.monotonic() >= deadline:
                return result
            time.sleep(interval)


def scrape(url, timeout=5):
    """GET `url`: (status, Content-Type, body)."""
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return (response.status, response.headers.get("Content-Type", ""),
                response.read().decode("utf-8"))


def promtool_check_metrics(promtool, text, timeout=30):
    """`promtool check metrics` over `text`: (exit code, its output)."""
    result = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True,
                            text=True, timeout=timeout)
    return result.returncode, result.stdout + result.stderr


class Checks:
    """Counts passed and failed checks, printing one line per check."""

    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, name, condition, detail=""):
        if condition:
            self.passed += 1
            print("ok    " + name, flush=True)
        else:
            self.failed += 1
            print("FAIL  " + name + (": " + str(detail) if detail != "" else ""), flush=True)
        return condition


def write_json(directory, name, value):
    """Writes `value` as JSON to directory/name; the path."""
    path = os.path.join(directory, name)
    with open(path, "w") as f:
        json.dump(value, f)
    return path
