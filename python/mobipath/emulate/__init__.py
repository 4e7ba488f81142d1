"""Emulation: run a scenario through the real Linux TCP/MPTCP stack, across the simulator's link model.

- ``netns``: namespaces (create, enter from one thread, sweep after a crash), sysctl, MPTcpExt;
- ``topology``: sender and receiver namespaces joined by N emulated paths, MPTCP endpoints;
- ``plan``: what a scenario asks for, and what the kernel cannot do (refused or substituted);
- ``kernel_info``: ``TCP_INFO``, ``MPTCP_INFO``, ``MPTCP_TCPINFO``, ``MPTCP_SUBFLOW_ADDRS``;
- ``traffic``: the bulk transfer on real sockets and its per-bin measurements;
- ``runner``: ``run`` (one scenario → a ``Result`` in the simulator's schema) and ``bench``;
- ``compare``: simulation and emulation of one scenario side by side; ``fidelity``: the grid.

See README.md in this folder.
"""

from .kernel_info import TcpInfo, tcp_info
from .netns import (
    EmulateError,
    InNetns,
    check_environment,
    emulator_binary,
    emulator_command,
    list_namespaces,
    sweep_stale,
)
from .plan import DEFAULT_MAX_DURATION_S, KERNEL_CC, SUBSTITUTES, Plan, ensure_cc, plan
from .runner import bench, describe_emulation, run
from .topology import Topology

__all__ = [
    "EmulateError",
    "InNetns",
    "Plan",
    "TcpInfo",
    "Topology",
    "KERNEL_CC",
    "SUBSTITUTES",
    "DEFAULT_MAX_DURATION_S",
    "bench",
    "check_environment",
    "describe_emulation",
    "emulator_binary",
    "emulator_command",
    "ensure_cc",
    "list_namespaces",
    "plan",
    "run",
    "sweep_stale",
    "tcp_info",
]
