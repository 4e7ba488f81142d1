"""ACK behaviour of the two receivers on the lossy rows of the independent grid.

Kernel side (needs root and `mobipath-emu`, as `mobipath fidelity --independent`): one run per
seed on the reference path; prints data frames the relay delivered, ACK frames it carried back,
and the receiver namespace's /proc/net/netstat counters DelayedACKs (delayed-ACK timer
expiries that sent an ACK) and TCPAckCompressed (SACK compression), plus the sender's
TCPSackRecovery / TCPTimeouts and the 1-minute load average.
Simulator side: the same rows, ACKs sent (sum of the `acks_per_s` series) per data segment.

Run from the repository root: `python docs/fidelity/independent/ack_probe.py [kernel|sim] ROW SEEDS`
with ROW one of the keys of ROWS and SEEDS e.g. 1001,1002 (kernel) or 1,2,3 (simulator).
It prints what it measured."""

import sys
from pathlib import Path

from mobipath import api
from mobipath.emulate import fidelity as fid

ROWS = {
    "reno-10": fid.Config(10, 20, 0.02, "reno"),
    "cubic-10": fid.Config(10, 20, 0.02, "cubic"),
    "reno-20": fid.Config(20, 50, 0.005, "reno"),
    "cubic-20": fid.Config(20, 50, 0.005, "cubic"),
}
KEYS = ("DelayedACKs", "TCPAckCompressed", "TCPSackRecovery", "TCPTimeouts", "TCPDSACKOldSent")


def netstat(ns: str) -> dict:
    from mobipath.emulate.netns import ns_exec

    lines = ns_exec(ns, "cat", "/proc/net/netstat").stdout.splitlines()
    d = {}
    for head, vals in zip(lines[::2], lines[1::2]):
        d.update(zip(head.split()[1:], map(int, vals.split()[1:])))
    return {k: d.get(k, 0) for k in KEYS}


def kernel(c: fid.Config, seed: int) -> None:
    from mobipath.emulate import independent

    seen = {}
    orig = independent.IndependentPath.stop_relay

    def stop_relay(self):  # read the counters before the namespaces go
        seen["sender"], seen["receiver"] = netstat(self.ns["c"]), netstat(self.ns["s"])
        return orig(self)

    independent.IndependentPath.stop_relay = stop_relay
    try:
        f = independent.run(fid.scenario(c, 15.0, 3.0, seed=seed, independent=True))
    finally:
        independent.IndependentPath.stop_relay = orig
    rel = f["reference"]["relay"]
    data, acks = rel["forward"]["frames_out"], rel["reverse"]["frames_in"]
    load = Path("/proc/loadavg").read_text().split()[0]
    print(
        f"kernel seed {seed}: goodput {f['goodput_mbps']:.2f} Mbit/s, {data} data frames, {acks} ACKs "
        f"({acks / data:.2f} per frame), receiver {seen['receiver']}, sender {seen['sender']}, load {load}",
        flush=True,
    )


def sim(c: fid.Config, seed: int) -> None:
    r = api.run(fid.scenario(c, 15.0, 3.0, seed=seed, independent=True))
    f = r.summary["flows"]["f"]
    ts = r.timeseries
    acks = sum(v for m, v in zip(ts["metric"], ts["value"]) if m == "acks_per_s") * 0.1
    segs = f["segments_sent"]
    print(
        f"simulator seed {seed}: goodput {f['goodput_mbps']:.2f} Mbit/s, {segs} data segments sent, {acks:.0f} ACKs "
        f"({acks / segs:.2f} per segment), duplicates at the receiver {f['duplicate_segments']}",
        flush=True,
    )


if __name__ == "__main__":
    side, row, seeds = sys.argv[1], ROWS[sys.argv[2]], [int(s) for s in sys.argv[3].split(",")]
    print(f"{sys.argv[2]} ({row.label}):")
    for s in seeds:
        (kernel if side == "kernel" else sim)(row, s)
