#!/usr/bin/env python3
"""Runs one benchmark command and writes "seconds peak_anon_kib cpu_seconds" to OUT.

Usage: benches/timed.py OUT CMD [ARG...]   (exit status: the command's)

- seconds: wall-clock time from start to exit (time.monotonic), 2 decimals.
- peak_anon_kib: the largest RssAnon (/proc/PID/status: the process's anonymous memory,
  heap and stacks; not the file-backed pages of the files it maps, which are the page cache)
  seen by sampling every 2 ms, of the command's own process (children are not counted).
  /usr/bin/time's %M (VmHWM) counts mapped file pages too: cuenv maps each archive it
  imports (src/store/extract/zip.rs), so its %M includes the pages of the wheel it read
  while its heap stays a few MiB.
- cpu_seconds: the user + system CPU time of the command and of every descendant it waited
  for (os.wait4's rusage: cuenv's probe children, the two installs of a `pair`), 2 decimals.
  On a machine whose cores are all busy, wall time is this divided by the cores at best, so
  it says how much work a tool did, apart from how well it kept the cores busy.

Every tool of a benchmark is timed through this wrapper, so each pays the same sampling cost
(one read of a /proc file every 2 ms).
"""
import os
import subprocess
import sys
import time


def rss_anon(pid):
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            for line in f:
                if line.startswith(b"RssAnon:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def main():
    out, cmd = sys.argv[1], sys.argv[2:]
    start = time.monotonic()
    p = subprocess.Popen(cmd)
    peak = 0
    while True:
        pid, status, usage = os.wait4(p.pid, os.WNOHANG)
        if pid == p.pid:
            break
        peak = max(peak, rss_anon(p.pid))
        time.sleep(0.002)
    seconds = time.monotonic() - start
    cpu = usage.ru_utime + usage.ru_stime
    with open(out, "w") as f:
        f.write(f"{seconds:.2f} {peak} {cpu:.2f}\n")
    sys.exit(os.waitstatus_to_exitcode(status))


if __name__ == "__main__":
    main()
