#!/usr/bin/env python3
"""redis-cli's interactive hints, as a user at a terminal sees them.

Usage: python3 cli_hints.py PORT

Runs `redis-cli -p PORT` on a pseudo-terminal (200 columns), types each
partial command of INPUTS one key at a time, and prints, per input, the
last hint redis-cli drew (the grey text after the cursor, ANSI colour
codes removed), then erases the line (Ctrl-U) and quits. redis-cli 7.0
builds these hints from the server's COMMAND DOCS reply. Only the standard
library is used; exit status 2 when redis-cli cannot run.
"""
import fcntl
import os
import pty
import re
import select
import struct
import sys
import termios
import time

INPUTS = ["set ", "set k v ", "hset k ", "client kill ", "xadd s ", "zadd z ", "config get ",
          "georadius ", "bitfield k ", "object "]
HINT = re.compile(rb"\x1b\[0;90;49m(.*?)\x1b\[0m")


def main():
    port = sys.argv[1]
    pid, fd = pty.fork()
    if pid == 0:
        os.environ["TERM"] = "xterm"
        try:
            os.execvp("redis-cli", ["redis-cli", "-p", port])
        finally:
            os._exit(2)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 200, 0, 0))

    def read(secs):
        out, end = b"", time.time() + secs
        while time.time() < end:
            r, _, _ = select.select([fd], [], [], 0.05)
            if r:
                try:
                    out += os.read(fd, 65536)
                except OSError:
                    break
        return out

    read(1.5)
    for text in INPUTS:
        out = b""
        for ch in text:
            os.write(fd, ch.encode())
            out += read(0.05)
        out += read(0.3)
        hints = HINT.findall(out)
        print(f"{text!r} -> {hints[-1].decode(errors='replace') if hints else '(none)'}")
        os.write(fd, b"\x15")
        read(0.1)
    os.write(fd, b"quit\r")
    read(0.3)
    os.waitpid(pid, 0)


if __name__ == "__main__":
    main()
