"""What one emulation run does, resolved from a scenario, and what the kernel cannot do.

The scenario is first checked by the simulator's own validation. Then every feature the real
kernel (or this emulator) cannot reproduce is refused with a message naming the field, unless the
user passes ``substitute=True`` (``--substitute``): then the nearest kernel behaviour is used and
each substitution is listed in the results and the provenance.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from ..source import load_source
from .netns import EmulateError
from .topology import MAX_PATHS

#: Congestion controls the kernel offers (loaded with modprobe when needed).
KERNEL_CC = ("reno", "cubic", "bbr")
#: Nearest kernel controller for simulator-only ones, used only with ``substitute=True``. The
#: coupled controllers (LIA, OLIA, BALIA, wVegas) are not in upstream Linux; per subflow they
#: are AIMD with Reno's increase as an upper bound, so uncoupled Reno is the nearest.
SUBSTITUTES = {"newreno": "reno", "tahoe": "reno", "lia": "reno", "olia": "reno", "balia": "reno", "wvegas": "reno"}
#: Simulator controllers with no kernel counterpart close enough to substitute (refused).
NO_KERNEL_EQUIVALENT = ("vegas",)
#: The upstream kernel's only packet scheduler (net/mptcp/protocol.c), our `linux-default`.
KERNEL_SCHEDULER = "linux-default"
DEFAULT_MAX_DURATION_S = 300.0


@dataclass
class Plan:
    name: str
    seed: int
    duration_s: float
    bin_s: float
    warmup_s: float
    flow: str
    protocol: str
    cc_requested: str
    cc: str
    start_s: float
    stop_s: Optional[float]
    #: ``{"name": path, "links": [<[[links]] table>, ...]}`` in subflow order.
    paths: list[dict[str, Any]]
    base_dir: Path
    substitutions: list[str]
    not_applied: list[str]
    scenario_text: str
    scenario_file: Optional[str]
    scheduler_requested: Optional[str] = None
    backup: list[bool] = field(default_factory=list)
    #: ``{"at_s", "subflow", "backup"}``, sorted by time.
    mp_prio: list[dict[str, Any]] = field(default_factory=list)
    #: The train's true handovers (``{"operator", "link", "start_s", "end_s"}``), applied as link outages.
    handovers: list[dict[str, Any]] = field(default_factory=list)
    #: The scenario with every default filled in (from the simulator's plan; for provenance).
    resolved_scenario: dict[str, Any] = field(default_factory=dict)

    @property
    def link(self) -> dict[str, Any]:
        """The first path's first link (single-link scenarios)."""
        return self.paths[0]["links"][0]


def load_toml(text: str) -> dict[str, Any]:
    """The scenario's TOML table (for building the kernel-equivalent scenario from the user's text)."""
    try:
        import tomllib  # type: ignore[import-not-found]
    except ImportError:  # pragma: no cover - Python < 3.11
        import tomli as tomllib  # type: ignore[no-redef]
    return tomllib.loads(text)


def resolved_plan(src: Any) -> dict[str, Any]:
    """The simulator's resolved plan of a valid scenario (`_core.plan`): flows, paths, the links
    as a run builds them (the train's handovers folded in) and what is set away from defaults."""
    import json

    from .. import _core

    return json.loads(_core.plan(src.text, src.file, str(src.base_dir), None))


def plan(
    scenario: Any, *, substitute: bool = False, max_duration_s: float = DEFAULT_MAX_DURATION_S, proxy: bool = False
) -> Plan:
    """Checks the scenario (with the simulator's own validation) and what emulation supports.
    `proxy`: for ``emulate --proxy`` (proxychain.py), where the router proxy's PHA-D runs the
    scenario's ``mptcp.pha_d`` (its policy is chosen per run there), so it is not refused."""
    from .. import api
    from ..errors import ScenarioError

    src = load_source(scenario)
    where = src.file or "scenario"
    errors = api.validate(scenario)
    if errors:
        raise ScenarioError(errors, src.file)
    rp = resolved_plan(src)
    flows = rp["flows"]
    if len(flows) != 1:
        raise EmulateError(f"{where}: emulate runs exactly one flow; the scenario has {len(flows)}")
    fl = flows[0]
    kind = fl["traffic"]["kind"]
    if kind != "bulk":
        raise EmulateError(f"{where}: flows[0].traffic.kind = {kind!r}: emulate runs bulk transfers only")
    mptcp = fl["protocol"] == "mptcp"
    path_names = list(fl["paths"])
    if len(path_names) > MAX_PATHS:
        raise EmulateError(f"{where}: flows[0].paths has {len(path_names)} paths; emulate builds at most {MAX_PATHS}")
    if rp["scenario"].get("cells"):
        raise EmulateError(f"{where}: cells: LTE cells are simulated only; emulate cannot run them")
    if (rp["scenario"].get("hst") or {}).get("harq"):
        raise EmulateError(
            f"{where}: hst.harq: HARQ delay and residual radio loss are simulated only; emulate cannot run them"
        )
    links_by_name = {ln["name"]: ln for ln in rp["links"]}
    paths_by_name = {p["name"]: p for p in rp["paths"]}
    paths: list[dict[str, Any]] = []
    seen: dict[str, str] = {}
    for pn in path_names:
        p = paths_by_name[pn]
        for ln in p["links"]:
            if ln in seen:
                raise EmulateError(
                    f"{where}: link {ln!r} is on paths {seen[ln]!r} and {pn!r} (or twice on one); "
                    "emulate gives every path its own links, so shared bottlenecks cannot be emulated"
                )
            seen[ln] = pn
        paths.append({"name": pn, "links": [links_by_name[ln] for ln in p["links"]]})
    if any(n.get("element") for n in rp["scenario"].get("nodes", [])):
        raise EmulateError(f"{where}: nodes[].element: network elements are simulated only; emulate cannot run them")

    subs: list[str] = []
    not_applied: list[str] = []

    def needs_substitute(field_: str, what: str, instead: str) -> None:
        if not substitute:
            raise EmulateError(
                f"{where}: {field_}: {what}; pass --substitute to run with {instead} (recorded in the results)"
            )
        subs.append(f"{field_}: {instead}")
        not_applied.append(field_)

    cc_req = str(fl["cc"]).lower()
    if cc_req in KERNEL_CC:
        cc = cc_req
    elif cc_req in SUBSTITUTES:
        cc = SUBSTITUTES[cc_req]
        if not substitute:
            raise EmulateError(
                f"{where}: flows[0].cc = {cc_req!r}: the Linux kernel has no {cc_req}; "
                f"pass --substitute to run kernel {cc} instead (recorded in the results)"
            )
        subs.append(f"flows[0].cc: {cc_req} -> kernel {cc}")
    else:
        raise EmulateError(
            f"{where}: flows[0].cc = {cc_req!r}: not available in the Linux kernel "
            f"(emulate supports {', '.join(KERNEL_CC)})"
        )

    sched_req: Optional[str] = None
    backup: list[bool] = []
    mp_prio: list[dict[str, Any]] = []
    non_default = set(fl["non_default"])
    if mptcp:
        sched_req = str(fl["scheduler"])
        if sched_req != KERNEL_SCHEDULER:
            needs_substitute(
                "flows[0].scheduler",
                f"{sched_req!r} is not in the Linux kernel (its only scheduler is our {KERNEL_SCHEDULER!r})",
                "the kernel's default scheduler",
            )
        m = fl["mptcp"]
        backup = [bool(b) for b in m.get("backup", [])]
        if backup[:1] == [True]:
            raise EmulateError(
                f"{where}: flows[0].mptcp.backup[0]: the kernel cannot open the initial subflow as "
                "backup; mark it with an mp_prio event instead"
            )
        for key, what in (
            ("rcv_buf_bytes", "the kernel autotunes its receive buffer"),
            ("rcv_buf_packets", "the kernel autotunes its receive buffer"),
            ("join_delay_ms", "the kernel joins as soon as the connection is established"),
            ("receiver_recovery", "the kernel has no receiver-based recovery (P1)"),
            ("pha_d", "PHA-D runs only in the router proxy; use --proxy"),
        ):
            if f"mptcp.{key}" in non_default and not (proxy and key == "pha_d"):
                needs_substitute(f"flows[0].mptcp.{key}", what, "kernel defaults")
        mp_prio = sorted((dict(e) for e in m.get("mp_prio", [])), key=lambda e: float(e["at_s"]))
    for key in ("tcp", "receiver"):
        if any(f.startswith(key + ".") for f in non_default):
            needs_substitute(f"flows[0].{key}", "the emulator uses the kernel's own TCP settings", "kernel defaults")

    duration = float(rp["duration_s"])
    if duration > max_duration_s:
        raise EmulateError(
            f"{where}: duration_s = {duration:g}: emulation runs in real time; the limit is "
            f"{max_duration_s:g} s (raise it with --max-duration)"
        )
    return Plan(
        name=str(rp["scenario"].get("name") or (Path(src.file).stem if src.file else "scenario")),
        seed=int(rp["seed"]),
        duration_s=duration,
        bin_s=float(rp["bin_ms"]) / 1000.0,
        warmup_s=float(rp["warmup_s"]),
        flow=fl["name"],
        protocol="mptcp" if mptcp else "tcp",
        cc_requested=cc_req,
        cc=cc,
        start_s=float(fl["start_s"]),
        stop_s=fl["stop_s"],
        paths=paths,
        base_dir=Path(src.base_dir).resolve(),
        substitutions=subs,
        not_applied=not_applied,
        scenario_text=src.text,
        scenario_file=src.file,
        scheduler_requested=sched_req,
        backup=backup,
        mp_prio=mp_prio,
        handovers=rp["handovers"],
        resolved_scenario=rp["scenario"],
    )


def ensure_cc(cc: str) -> None:
    """Loads the kernel module of `cc` if the kernel does not list it yet."""
    avail_file = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")
    if cc in avail_file.read_text().split():
        return
    subprocess.run(["modprobe", f"tcp_{cc}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    avail = avail_file.read_text().split()
    if cc not in avail:
        raise EmulateError(f"the kernel cannot load congestion control {cc!r} (available: {' '.join(avail)})")
