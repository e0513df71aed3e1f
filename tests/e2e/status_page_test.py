#!/usr/bin/env python3
"""The status page and the admin endpoint, as an operator meets them: a real
headless Chromium opens /status while a breaker is open, and an admin request
forces another one.

  status_page_test.py CACHE_SERVER CACHE_CLIENT [--chromium=PATH] [--screenshot=PNG]

1. cache_server answers every Get with UNAVAILABLE (faultInjection) and
   serves its own /status; `cache_client load` runs with a three-state breaker
   per method that opens on a failure rate of 30% and stays open 60 s, with
   --metrics_port, --admin and --admin_token.
2. Once /status.json shows Get's breaker open: Chromium (headless, Debian's
   `chromium`) loads /status; its DOM shows both methods, Get's row marked
   open, and the page holds no external script, style or image; a
   screenshot is kept (--screenshot).
3. The admin endpoint: without the token 401, with it force_open of Store is
   applied (Store's row then says force_open, and the client logs the
   operator's event), an unknown method is 404, and the server's /status.json
   lists its methods.

Bounded: every wait has a timeout, the run at most 90 s (about 15 s
normally); every process dies with this one. Prints one line per check and
exits 1 on a failure, 77 (a skip, for ctest) only when no chromium is found.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import prometheus_harness as h  # noqa: E402

SKIP = 77
GET = "/cache.v1.CacheService/Get"
STORE = "/cache.v1.CacheService/Store"
TOKEN = "s3cret-token"

SERVER = {"methodConfig": [
    {"name": [{"service": "cache.v1.CacheService"}], "throttle": {"maxConcurrency": 64}},
    {"name": [{"service": "cache.v1.CacheService", "method": "Get"}],
     "throttle": {"maxConcurrency": 64},
     "faultInjection": {"abortCode": "UNAVAILABLE", "abortFraction": 1.0, "seed": 3}},
]}
CLIENT = {"methodConfig": [{
    "name": [{"service": "cache.v1.CacheService"}],
    "timeout": "1s",
    "breaker": {"threeState": {
        "failureRateThreshold": 0.3, "minRequests": 10, "window": "2s", "buckets": 10,
        "openDuration": "60s"}},
}]}




def status_json(port):
    return json.loads(h.scrape("http://127.0.0.1:%d/status.json" % port)[2])


def client_row(status, method):
    for row in status["client_methods"]:
        if row["method"] == method:
            return row
    return None


def post(port, query, token=None):
    """POST /admin/breaker?query: (HTTP status, parsed JSON body)."""
    request = urllib.request.Request("http://127.0.0.1:%d/admin/breaker?%s" % (port, query),
                                     data=b"", method="POST")
    if token is not None:
        request.add_header("Authorization", "Bearer " + token)
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, json.loads(response.read().decode())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read().decode() or "{}")


def chromium(binary, tmp, *args, timeout=60):
    """Runs headless Chromium with `args`: its stdout."""
    argv = [binary, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
            "--no-first-run", "--user-data-dir=" + os.path.join(tmp, "profile")] + list(args)
    result = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                            preexec_fn=h._die_with_parent)
    if result.returncode != 0:
        raise RuntimeError("chromium exited %d: %s" % (result.returncode, result.stderr[-2000:]))
    return result.stdout


def wait_until(condition, seconds, interval=0.2):
    deadline = time.monotonic() + seconds
    while True:
        try:
            result = condition()
        except (OSError, ValueError, KeyError):
            result = None
        if result or time.monotonic() >= deadline:
            return result
        time.sleep(interval)


def run(args, checks):
    with tempfile.TemporaryDirectory(prefix="status_page_test.") as tmp, \
            h.Processes() as processes:
        server_policy = h.write_json(tmp, "server.json", SERVER)
        client_policy = h.write_json(tmp, "client.json", CLIENT)
        server_port, client_port = h.free_port(), h.free_port()
        server, target = h.start_cache_server(processes, args.cache_server, server_policy,
                                              server_port)
        client = h.start_load(processes, args.cache_client, target, client_policy, client_port,
                              seconds=90, concurrency=2,
                              extra=["--admin", "--admin_token=" + TOKEN])

        def get_open():
            row = client_row(status_json(client_port), GET)
            return row is not None and row["breaker"] is not None and \
                row["breaker"]["state"] == "open"
        if not checks.check("/status.json shows Get's breaker open", wait_until(get_open, 20)):
            raise RuntimeError("no open breaker\n" + client.output() + "\n" + server.output())
        channel = status_json(client_port)["client_methods"][0]["channel"]

        # The page in a real browser.
        url = "http://127.0.0.1:%d/status" % client_port
        dom = chromium(args.chromium, tmp, "--dump-dom", url)
        checks.check("Chromium renders the page with its title",
                     "<title>grpc-resilience status</title>" in dom, dom[:500])
        checks.check("the page shows Get's row marked open",
                     'class="open"' in dom and 'data-method="%s"' % GET in dom, dom[:3000])
        checks.check("the page shows Store's row", 'data-method="%s"' % STORE in dom)
        checks.check("the page loads nothing from elsewhere",
                     all(s not in dom for s in ("<script", "<link", "src=", "http://", "https://")))
        checks.check("the page lists the breaker's opening among its events",
                     "closed -&gt; open" in dom or "closed -> open" in dom, dom[-2000:])

        # The admin endpoint.
        query = "channel=%s&method=%s&command=force_open" % (
            urllib.request.quote(channel, safe=""), urllib.request.quote(STORE, safe=""))
        code, body = post(client_port, query)
        checks.check("an admin request without the token gets 401", code == 401, (code, body))
        code, body = post(client_port, query, "wrong")
        checks.check("an admin request with a wrong token gets 401", code == 401, (code, body))
        code, body = post(client_port, query, TOKEN)
        checks.check("force_open of Store with the token is applied",
                     code == 200 and body.get("applied") is True, (code, body))
        row = client_row(status_json(client_port), STORE)
        checks.check("Store's breaker now says force_open",
                     row is not None and row["breaker"]["mode"] == "force_open", row)
        checks.check("the client logged the operator's command",
                     client.stderr.wait_for(lambda l: "operator force_open of breaker " + STORE
                                            in l, 5) is not None, client.output())
        # One endpoint's breaker: listed under Get, forced by the same endpoint.
        get_row = client_row(status_json(client_port), GET) or {}
        endpoints = get_row.get("endpoints") or []
        checks.check("Get's row lists the endpoint its calls went to", len(endpoints) == 1,
                     get_row)
        if endpoints:
            endpoint = endpoints[0]["endpoint"]
            code, body = post(client_port, "channel=%s&method=%s&command=force_closed&endpoint=%s" % (
                urllib.request.quote(channel, safe=""), urllib.request.quote(GET, safe=""),
                urllib.request.quote(endpoint, safe="")), TOKEN)
            checks.check("force_closed of Get's endpoint is applied",
                         code == 200 and body.get("endpoint") == endpoint, (code, body))
            row = client_row(status_json(client_port), GET) or {}
            checks.check("Get's endpoint now says force_closed",
                         [e["breaker"]["mode"] for e in row.get("endpoints", [])] ==
                         ["force_closed"], row)
        dom = chromium(args.chromium, tmp, "--dump-dom", url)
        checks.check("the page shows Get's endpoint under it",
                     'class="endpoint forced" data-channel' in dom, dom[:4000])
        checks.check("the page marks Store's row as forced",
                     'class="forced" data-channel' in dom and STORE in dom)
        # The screenshot docs/operations.md shows: Get open, Store forced open.
        shot = args.screenshot or os.path.join(tmp, "status.png")
        os.makedirs(os.path.dirname(os.path.abspath(shot)), exist_ok=True)
        chromium(args.chromium, tmp, "--window-size=1280,720", "--screenshot=" + shot, url)
        checks.check("a screenshot was taken (%s)" % shot,
                     os.path.exists(shot) and os.path.getsize(shot) > 10000)

        code, body = post(client_port, query.replace("Store", "Nope"), TOKEN)
        checks.check("an unknown method gets 404 naming it",
                     code == 404 and "Nope" in body.get("error", ""), (code, body))

        server_status = status_json(server_port)
        methods = {row["method"] for row in server_status["server_methods"]}
        checks.check("the server's /status.json lists Get and Store",
                     {GET, STORE} <= methods, server_status)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("cache_server")
    parser.add_argument("cache_client")
    parser.add_argument("--chromium", default="")
    parser.add_argument("--screenshot", default="")
    args = parser.parse_args()
    args.chromium = args.chromium or shutil.which("chromium") or shutil.which("chromium-browser")
    if not args.chromium:
        print("skipped: no chromium (Debian: apt-get install chromium)")
        return SKIP
    checks = h.Checks()
    try:
        run(args, checks)
    except Exception as e:  # noqa: BLE001 - reported as a failed check
        checks.check("the run completed", False, e)
    print("%d passed, %d failed" % (checks.passed, checks.failed))
    return 1 if checks.failed else 0


if __name__ == "__main__":
    sys.exit(main())
