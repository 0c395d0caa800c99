"""The line protocol between a client-compatibility script and
tests/clients.rs.

A script gets the server's port and password as its first two arguments
(a mode may follow), prints `ok NAME`, `FAIL NAME: why` or `skip NAME: why` for each
scenario, and prints `RESTART` when it wants the server restarted on the
same port: the test then restarts the process and writes one line to the
script's standard input. Exit status 3 means a package is missing.
"""

import sys
import time
import traceback


class Check(Exception):
    """A result that differs from the expected one."""


class Skip(Exception):
    """The client library cannot run this scenario against this server
    (the reason is reported as `skip NAME: why`)."""


def expect(got, want, what):
    """Fails the scenario unless `got == want`."""
    if got != want:
        raise Check(f"{what}: expected {want!r}, got {got!r}")


def ensure(cond, what):
    """Fails the scenario unless `cond` holds."""
    if not cond:
        raise Check(what)


def report(name, err):
    """Prints the scenario's result line."""
    if err is None:
        print(f"ok {name}", flush=True)
    elif isinstance(err, Skip):
        print(f"skip {name}: {err}", flush=True)
    else:
        text = f"{type(err).__name__}: {err}".replace("\n", " | ")
        print(f"FAIL {name}: {text}", flush=True)
        traceback.print_exception(err, file=sys.stderr)


def run(name, fn):
    """Runs one synchronous scenario and reports it."""
    try:
        fn()
        report(name, None)
    except Exception as e:  # noqa: BLE001 - every failure is reported
        report(name, e)


async def arun(name, fn):
    """Runs one asyncio scenario and reports it."""
    try:
        await fn()
        report(name, None)
    except Exception as e:  # noqa: BLE001
        report(name, e)


async def arun_all(namespace):
    """Runs every `s_NAME` coroutine function of `namespace` (a module's
    globals()) in definition order, reporting each as NAME."""
    for key, fn in list(namespace.items()):
        if key.startswith("s_") and callable(fn):
            await arun(key[2:], fn)


def restart_server():
    """Asks the test to restart the server and waits until it has."""
    print("RESTART", flush=True)
    sys.stdin.readline()


def args():
    """(port, password, mode) from the command line."""
    mode = sys.argv[3] if len(sys.argv) > 3 else ""
    return int(sys.argv[1]), sys.argv[2], mode


def until(deadline_s, fn, what, pause=0.05):
    """Calls `fn` until it returns a true value (returned) or fails after
    `deadline_s` seconds; exceptions from `fn` count as not yet."""
    end = time.monotonic() + deadline_s
    last = None
    while time.monotonic() < end:
        try:
            v = fn()
            if v:
                return v
        except Exception as e:  # noqa: BLE001
            last = e
        time.sleep(pause)
    raise Check(f"{what} within {deadline_s}s (last error: {last!r})")
