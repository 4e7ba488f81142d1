"""Simulator-only probe of the lossy Reno/CUBIC rows of the independent grid: each
variant's 10-seed mean (seeds 1-10, the grid's scenario with a token_bucket link) against the
kernel's mean from fidelity.json. Run from the repository root:
`python docs/fidelity/independent/receiver_probe.py`. It prints what it measured."""

import json
import statistics
from pathlib import Path

from mobipath import api
from mobipath.emulate import fidelity as fid

HERE = Path(__file__).resolve().parent
BULK = 'traffic = { kind = "bulk" }'
VARIANTS = {
    "as run": lambda t: t,
    "no delayed ACK": lambda t: t.replace(BULK, BULK + "\nreceiver = { delayed_ack = false }"),
    "rcv_buf 6 MiB": lambda t: t.replace(BULK, BULK + "\nreceiver = { rcv_buf_bytes = 6291456 }"),
    "rack off": lambda t: t.replace(BULK, BULK + "\ntcp = { rack = false }"),
}


def main() -> None:
    d = json.loads((HERE / "fidelity.json").read_text())
    kern = {
        (r["config"]["rate_mbps"], r["config"]["cc"]): (r["emu_goodput_mbps"], r["emu_ci_mbps"])
        for r in d["rows"]
        if r["config"]["loss"] > 0
    }
    rows = [
        fid.Config(20, 50, 0.005, "reno"),
        fid.Config(20, 50, 0.005, "cubic"),
        fid.Config(10, 20, 0.02, "cubic"),
        fid.Config(10, 20, 0.02, "reno"),
    ]
    for c in rows:
        for name, edit in VARIANTS.items():
            fs = [
                api.run(edit(fid.scenario(c, 15.0, 3.0, seed=k, independent=True))).summary["flows"]["f"]
                for k in range(1, 11)
            ]
            m, h = fid.mean_ci([f["goodput_mbps"] for f in fs])
            km, kh = kern[(c.rate_mbps, c.cc)]
            retx = statistics.fmean(f["segments_retransmitted"] for f in fs)
            print(
                f"{c.label} {c.cc} {name}: sim {m:.2f} ± {h:.2f} (kernel {km:.2f} ± {kh:.2f}, "
                f"{100 * (m - km) / km:+.1f} %), retx mean {retx:.0f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
