"""The CPU time server processes use while nothing is asked of them: what their timers cost
(on PostgreSQL, the sweep for the runs of processes that are gone, once a second per process).

Usage: python idle_cpu.py SECONDS NAME=PID [NAME=PID ...]

Each process is read from /proc before and after SECONDS of idleness; each line printed gives a
process's CPU time over the period and as a share of one core."""
import sys
import time

from procfs import cpu_seconds


def main():
    seconds = float(sys.argv[1])
    servers = [arg.split("=", 1) for arg in sys.argv[2:]]
    before = {name: cpu_seconds(int(pid)) for name, pid in servers}
    time.sleep(seconds)
    for name, pid in servers:
        used = cpu_seconds(int(pid)) - before[name]
        print(f"{name}: {used * 1000:.0f} ms of CPU in {seconds:.0f} s, {100 * used / seconds:.3f} % of one core")


main()
