"""Hostile: a fork bomb. Every process forks forever.

Run under --pids 16: the run's cgroup refuses forks beyond its process
limit, so the bomb cannot grow, and whichever comes first of the wall-time
limit and the CPU-time limit (summed over all its processes) ends the whole
sandbox: its init dies, and the kernel kills every process left.
"""
import os

me = os.getpid()
print(f"fork bomb: starting as pid {me}", flush=True)
refused = 0
while True:
    try:
        os.fork()
    except OSError as e:
        if os.getpid() != me:
            continue
        refused += 1
        if refused == 1:
            print(f"fork bomb: fork refused: {e.strerror}", flush=True)
