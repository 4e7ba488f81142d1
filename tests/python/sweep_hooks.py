"""Test hooks for tests/python/test_sweep.py that must also work inside worker processes: forked
local workers inherit what the test process patched; Ray workers import this module (the tests'
Ray instance puts this folder on their PYTHONPATH and runs `doom_marked_runs` as its worker
setup hook)."""

import os
import signal

#: A scenario holding this line: its bbr run with seed 2 kills the worker process that runs it,
#: as the out-of-memory killer would.
MARK = "queue_packets = 37"


def doom_marked_runs():
    """Makes mobipath._core.run kill its own process for the marked run; returns the real run."""
    import mobipath._core as core

    real = getattr(core.run, "real", core.run)

    def run(text, file, base_dir, seed, *rest):
        if MARK in text and 'cc = "bbr"' in text and seed == 2:
            os.kill(os.getpid(), signal.SIGKILL)
        return real(text, file, base_dir, seed, *rest)

    run.real = real
    core.run = run
    return real


def attempt(counter: str, deaths: int) -> str:
    """A shell command for os.system (a job any worker can import): it counts this attempt in the
    file `counter` and kills its parent, the worker running it, on the first `deaths` attempts."""
    return f'echo x >> "{counter}"; [ "$(wc -l < "{counter}")" -gt {deaths} ] || kill -9 $PPID'
