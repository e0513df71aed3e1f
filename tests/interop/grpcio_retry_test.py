#!/usr/bin/env python3
"""Python grpcio (Debian's python3-grpcio, no code generation) against a real
cache_server whose Get is rate limited: grpcio's own retry (a service config
with RESOURCE_EXHAUSTED retryable) must see a throttled call as not processed,
retry it after the server's pushback, and get it served; and it must not
retry a call whose rejection says "do not retry" (pushback -1, gRFC A6).

  grpcio_retry_test.py PATH_TO_CACHE_SERVER

Prints 'N passed, N failed' and exits non-zero on any failure.
"""
import json
import os
import subprocess
import sys
import tempfile
import time

import grpc

GET = "/cache.v1.CacheService/Get"
STORE = "/cache.v1.CacheService/Store"


def field(number, data):
    """A length-delimited protobuf field (keys and values here are short)."""
    assert len(data) < 128
    return bytes([number << 3 | 2, len(data)]) + data


def get_request(key):
    return field(1, key)


def store_request(key, value):
    return field(1, key) + field(2, value)


def retry_config(max_attempts):
    """grpcio's own retry: RESOURCE_EXHAUSTED retryable, backoff 10 ms (any
    longer wait is the server's pushback)."""
    return json.dumps({
        "methodConfig": [{
            "name": [{"service": "cache.v1.CacheService"}],
            "retryPolicy": {
                "maxAttempts": max_attempts,
                "initialBackoff": "0.01s",
                "maxBackoff": "0.01s",
                "backoffMultiplier": 1,
                "retryableStatusCodes": ["RESOURCE_EXHAUSTED"],
            },
        }]
    })


# One call per 0.5 s: a second call right after the first is throttled, with
# a pushback of about 500 ms (far above the retry policy's 10 ms backoff).
POLICY = json.dumps({
    "methodConfig": [{
        "name": [{"service": "cache.v1.CacheService", "method": "Get"}],
        "throttle": {"ratePerSecond": 2, "burst": 1},
    }]
})


# One Get at a time, each held 300 ms.
SLOW_SLOT_POLICY = json.dumps({
    "methodConfig": [{
        "name": [{"service": "cache.v1.CacheService", "method": "Get"}],
        "throttle": {"maxConcurrency": 1},
        "faultInjection": {"delay": "0.3s"},
    }]
})


# The same rate limit answering "do not retry" (gRFC A6: pushback -1).
DO_NOT_RETRY_POLICY = json.dumps({
    "methodConfig": [{
        "name": [{"service": "cache.v1.CacheService", "method": "Get"}],
        "throttle": {"ratePerSecond": 2, "burst": 1,
                     "retryShedding": {"doNotRetry": True}},
    }]
})


def slow_retry_config():
    """3 attempts, the first retry 0.6 s later: by then the bucket has a
    token, so a client that retried would be served."""
    return json.dumps({
        "methodConfig": [{
            "name": [{"service": "cache.v1.CacheService"}],
            "retryPolicy": {
                "maxAttempts": 3,
                "initialBackoff": "0.6s",
                "maxBackoff": "0.6s",
                "backoffMultiplier": 1,
                "retryableStatusCodes": ["RESOURCE_EXHAUSTED"],
            },
        }]
    })


def start_server(binary, policy_path):
    server = subprocess.Popen([binary, "--policy=" + policy_path],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = server.stdout.readline()
    if not line.startswith("listening on "):
        server.kill()
        raise RuntimeError("cache_server did not start: %r %s" % (line, server.stderr.read()))
    return server, line.split()[-1]


def main():
    binary = sys.argv[1]
    passed, failed = 0, 0

    def check(name, condition, detail=""):
        nonlocal passed, failed
        if condition:
            passed += 1
            print("ok    " + name)
        else:
            failed += 1
            print("FAIL  " + name + (": " + detail if detail else ""))

    with tempfile.TemporaryDirectory() as tmp:
        policy_path = os.path.join(tmp, "policy.json")
        with open(policy_path, "w") as f:
            f.write(POLICY)
        server, address = start_server(binary, policy_path)
        try:
            plain = grpc.insecure_channel(address)
            retrying = grpc.insecure_channel(address, options=[
                ("grpc.service_config", retry_config(3)), ("grpc.enable_retries", 1)])
            store = plain.unary_unary(STORE)
            store(store_request(b"k", b"v"), timeout=5)

            # Without retry: the rejection itself, with its pushback.
            get = plain.unary_unary(GET)
            get(get_request(b"k"), timeout=5)  # takes the token
            try:
                get.with_call(get_request(b"k"), timeout=5)
                check("throttled call is rejected", False, "it was served")
            except grpc.RpcError as e:
                trailers = dict(e.trailing_metadata() or ())
                check("throttled call is rejected",
                      e.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, str(e.code()))
                pushback = int(trailers.get("grpc-retry-pushback-ms", "-1"))
                check("rejection carries a pushback of about 500 ms", 300 <= pushback <= 500,
                      str(pushback))

            # With grpcio's retry: the throttled attempt is retried after the
            # pushback and served.
            time.sleep(0.6)
            get_retrying = retrying.unary_unary(GET)
            get_retrying(get_request(b"k"), timeout=5)  # takes the token
            start = time.monotonic()
            try:
                response = get_retrying(get_request(b"k"), timeout=5)
                elapsed = time.monotonic() - start
                check("grpcio retries the throttled call and it is served",
                      response == field(1, b"v"), repr(response))
                check("grpcio waited for the pushback, not its 10 ms backoff", elapsed >= 0.3,
                      "%.3f s" % elapsed)
            except grpc.RpcError as e:
                check("grpcio retries the throttled call and it is served", False,
                      "%s: %s" % (e.code(), e.details()))
        finally:
            server.terminate()
            server.wait(timeout=10)

        # A fresh server whose first Get holds the only slot for 300 ms: two
        # Gets sent at once, each with grpcio's 5 attempts, are both served,
        # the second once the first is done (the pushbacks grow with how long
        # the first has run; with its age alone, all five attempts of the
        # second were spent within ~100 ms).
        with open(policy_path, "w") as f:
            f.write(SLOW_SLOT_POLICY)
        server, address = start_server(binary, policy_path)
        try:
            plain = grpc.insecure_channel(address)
            plain.unary_unary(STORE)(store_request(b"k", b"v"), timeout=5)
            # 5 attempts: gRPC's most.
            retrying = grpc.insecure_channel(address, options=[
                ("grpc.service_config", retry_config(5)), ("grpc.enable_retries", 1)])
            grpc.channel_ready_future(retrying).result(timeout=5)
            get_retrying = retrying.unary_unary(GET)
            calls = [get_retrying.future(get_request(b"k"), timeout=5) for _ in range(2)]
            for i, call in enumerate(calls):
                try:
                    response = call.result(timeout=10)
                    check("grpcio's 5 attempts get contended call %d served" % i,
                          response == field(1, b"v"), repr(response))
                except grpc.RpcError as e:
                    check("grpcio's 5 attempts get contended call %d served" % i, False,
                          "%s: %s" % (e.code(), e.details()))
        finally:
            server.terminate()
            server.wait(timeout=10)

        # "Do not retry": grpcio's retry gives up at the first rejection
        # instead of retrying 0.6 s later, when it would have been served.
        with open(policy_path, "w") as f:
            f.write(DO_NOT_RETRY_POLICY)
        server, address = start_server(binary, policy_path)
        try:
            plain = grpc.insecure_channel(address)
            plain.unary_unary(STORE)(store_request(b"k", b"v"), timeout=5)
            retrying = grpc.insecure_channel(address, options=[
                ("grpc.service_config", slow_retry_config()), ("grpc.enable_retries", 1)])
            get_retrying = retrying.unary_unary(GET)
            get_retrying(get_request(b"k"), timeout=5)  # takes the token
            start = time.monotonic()
            try:
                get_retrying.with_call(get_request(b"k"), timeout=5)
                check("grpcio does not retry after pushback -1", False,
                      "retried and served after %.3f s" % (time.monotonic() - start))
            except grpc.RpcError as e:
                elapsed = time.monotonic() - start
                trailers = dict(e.trailing_metadata() or ())
                check("rejection says do not retry",
                      trailers.get("grpc-retry-pushback-ms") == "-1", repr(trailers))
                check("grpcio does not retry after pushback -1",
                      e.code() == grpc.StatusCode.RESOURCE_EXHAUSTED and elapsed < 0.5,
                      "%s after %.3f s" % (e.code(), elapsed))
        finally:
            server.terminate()
            server.wait(timeout=10)

    print("%d passed, %d failed" % (passed, failed))
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
