"""Network namespaces: creating, entering from one thread, and removing them (also after a crash).

Every namespace mobipath creates is named ``mp-<pid>-<role>``; ``sweep_stale()`` removes those whose
``<pid>`` is gone (a run that was SIGKILLed), and every run calls it first.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Optional

from .. import provenance

CLONE_NEWNET = 0x40000000

NS_RE = re.compile(r"^mp-(\d+)-[a-z0-9]+$")


class EmulateError(Exception):
    """A run cannot happen (environment, unsupported scenario feature) or failed."""


# --------------------------------------------------------------------------- environment


def check_environment() -> None:
    """Refuses clearly unless this process can build namespaces and the kernel has MPTCP."""
    if sys.platform != "linux":
        raise EmulateError("emulation needs Linux (network namespaces, TUN)")
    if os.geteuid() != 0:
        raise EmulateError("emulation needs root (it creates network namespaces and TUN devices); run it with sudo")
    if not Path("/proc/sys/net/mptcp/enabled").exists():
        raise EmulateError("this kernel has no MPTCP (/proc/sys/net/mptcp/enabled is absent); emulation needs it")
    if shutil.which("ip") is None:
        raise EmulateError("the `ip` command (iproute2) is not installed")
    if not Path("/dev/net/tun").exists():
        raise EmulateError("/dev/net/tun is absent (load the tun module)")


def emulator_command() -> list[str]:
    """How to start the link emulator: ``$MOBIPATH_EMU``, else the workspace build of
    ``mobipath-emu`` (release, then debug), else ``mobipath-emu`` on PATH, else the copy inside
    the installed extension (``python -m mobipath.emulate.emu_process``), which every install has."""
    env = os.environ.get("MOBIPATH_EMU")
    if env:
        return [env]
    root = provenance.source_tree() or Path(__file__).resolve().parents[3]
    # The emulator runs the simulator's link model: a build older than either crate is stale.
    built = provenance.workspace_build(Path(root), "mobipath-emu", ("emu", "sim", "hst"))
    if built:
        return [built]
    found = shutil.which("mobipath-emu")
    if found:
        return [found]
    from .. import _core

    if hasattr(_core, "emulator_main"):
        return [sys.executable, "-m", "mobipath.emulate.emu_process"]
    raise EmulateError(
        "mobipath-emu not found: build it with `cargo build --release -p mobipath-emu` or set MOBIPATH_EMU"
    )


def emulator_binary() -> str:
    """The emulator command as one string (for messages)."""
    return " ".join(emulator_command())


def ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    r = subprocess.run(["ip", *args], capture_output=True, text=True)
    if check and r.returncode != 0:
        raise EmulateError(f"`ip {' '.join(args)}` failed: {r.stderr.strip()}")
    return r


def list_namespaces(prefix: str = "mp-") -> list[str]:
    """Names of network namespaces starting with ``prefix``."""
    r = ip("netns", "list", check=False)
    return [line.split()[0] for line in r.stdout.splitlines() if line.split() and line.split()[0].startswith(prefix)]


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def delete_namespace(name: str, timeout_s: float = 3.0) -> bool:
    """Deletes namespace `name`, killing any process still inside; returns whether it is gone.
    `ip netns del` can fail for a moment (EBUSY while a just-killed process, or one in another
    mount namespace such as an `ip netns exec` child, still holds the mount point): it is retried
    until `timeout_s`, then the failure is reported on stderr rather than left silent."""
    deadline = time.monotonic() + timeout_s
    while True:
        # Processes still inside (should be none: the emulator lives in the root namespace).
        r = ip("netns", "pids", name, check=False)
        for tok in r.stdout.split():
            if tok.isdigit() and int(tok) != os.getpid():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(tok), signal.SIGKILL)
        d = ip("netns", "del", name, check=False)
        if name not in list_namespaces(name):
            return True
        if time.monotonic() >= deadline:
            print(
                f"mobipath: could not delete network namespace {name}: {d.stderr.strip() or 'still listed'}",
                file=sys.stderr,
            )
            return False
        time.sleep(0.05)


def sweep_stale() -> list[str]:
    """Deletes ``mp-<pid>-*`` namespaces whose owning process is gone; returns their names."""
    removed = []
    for name in list_namespaces():
        m = NS_RE.match(name)
        if m and not _pid_alive(int(m.group(1))):
            delete_namespace(name)
            removed.append(name)
    return removed


_libc = ctypes.CDLL(None, use_errno=True)


class InNetns:
    """``with InNetns(name):`` — the calling thread is inside namespace ``name``; sockets made
    there stay there after the thread returns to its own namespace."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __enter__(self) -> None:
        self.home = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
        target = os.open(f"/run/netns/{self.name}", os.O_RDONLY)
        try:
            if _libc.setns(target, CLONE_NEWNET) != 0:
                e = ctypes.get_errno()
                raise EmulateError(f"setns into {self.name}: {os.strerror(e)}")
        finally:
            os.close(target)

    def __exit__(self, *exc: Any) -> None:
        if _libc.setns(self.home, CLONE_NEWNET) != 0:  # pragma: no cover - never seen
            os._exit(3)  # never go on in the wrong namespace
        os.close(self.home)


class Terminated(BaseException):
    """Raised in the main thread by SIGTERM so `with Topology(...)` unwinds and cleans up."""


def stop_child(p: subprocess.Popen, stats_file: Optional[Path]) -> tuple[str, Optional[dict[str, Any]]]:
    """Stops a forwarder process (the emulator or the independent relay): SIGTERM, 5 s of grace,
    then SIGKILL. Returns its stderr and the stats JSON it wrote at exit (None when it wrote none
    or the file does not parse, e.g. it was killed mid-write)."""
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
    try:
        _, err = p.communicate(timeout=5)
    except subprocess.TimeoutExpired:
        p.kill()
        _, err = p.communicate()
    stats = None
    if stats_file is not None and stats_file.exists():
        with contextlib.suppress(ValueError):
            stats = json.loads(stats_file.read_text())
    return err or "", stats


def ns_exec(ns: str, *cmd: str, check: bool = True) -> subprocess.CompletedProcess:
    """Runs `cmd` inside namespace `ns` (``ip netns exec``)."""
    r = subprocess.run(["ip", "netns", "exec", ns, *cmd], capture_output=True, text=True)
    if check and r.returncode != 0:
        raise EmulateError(f"`{' '.join(cmd)}` in {ns} failed: {r.stderr.strip()}")
    return r


def sysctl(ns: str, *settings: str) -> None:
    """Sets ``key=value`` sysctls inside `ns`; a key this kernel lacks is an error."""
    ns_exec(ns, "sysctl", "-qw", *settings)


def netstat_counters(ns: str, group: str = "MPTcpExt") -> dict:
    """The `group` counters of /proc/net/netstat inside `ns` (e.g. MPTcpExt, TcpExt)."""
    r = ns_exec(ns, "cat", "/proc/net/netstat", check=False)
    lines = [line.split() for line in r.stdout.splitlines()]
    for i in range(0, len(lines) - 1, 2):
        if lines[i] and lines[i][0] == f"{group}:" and lines[i + 1][0] == f"{group}:":
            return {k: int(v) for k, v in zip(lines[i][1:], lines[i + 1][1:])}
    return {}
