"""Written by notebook 12, section 5: which processes run this script's module level (a fresh Python)."""

import multiprocessing
import os
import sys

print("module level:", __name__, os.getpid(), flush=True)


def work():
    print("worker:", os.getpid(), flush=True)


if __name__ == "__main__":
    ctx = multiprocessing.get_context(sys.argv[1])
    workers = [ctx.Process(target=work) for _ in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
