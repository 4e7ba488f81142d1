"""Reruns the simulator side of the independent grid (deterministic, cheap) and compares it with
the kernel side recorded in fidelity.json (not rerun). Same scenarios and seeds as the grid run
(no-loss rows seed 1; lossy rows seeds 1-10, mean ± 95 % CI). Run from the repository root:
`python docs/fidelity/independent/sim_rerun.py ['RECEIVER KEYS']`, e.g. 'delack_ms = 1' to add
`receiver = { delack_ms = 1 }` to every flow. It prints what it measured."""

import json
import sys
from pathlib import Path

from mobipath import api
from mobipath.emulate import fidelity as fid

HERE = Path(__file__).resolve().parent


def main() -> None:
    d = json.loads((HERE / "fidelity.json").read_text())
    bulk = 'traffic = { kind = "bulk" }'
    extra = f"\nreceiver = {{ {sys.argv[1]} }}" if len(sys.argv) > 1 else ""
    n5 = n10 = 0
    for r in d["rows"]:
        cfg = {k: r["config"][k] for k in ("rate_mbps", "delay_ms", "loss", "cc")}
        if r["config"].get("paths", 1) != 1:
            continue
        c = fid.Config(cfg["rate_mbps"], cfg["delay_ms"], cfg["loss"], cfg["cc"])
        seeds = range(1, r["seeds"] + 1)
        g = [
            api.run(
                fid.scenario(c, d["seconds"], d["warmup_s"], seed=k, independent=True).replace(bulk, bulk + extra)
            ).summary["flows"]["f"]["goodput_mbps"]
            for k in seeds
        ]
        m, h = fid.mean_ci(g) if len(g) > 1 else (g[0], 0.0)
        km = r["emu_goodput_mbps"]
        diff = (m - km) / km
        n5 += abs(diff) <= 0.05
        n10 += abs(diff) <= 0.10
        if cfg["loss"] > 0:
            print(
                f"{c.label} {c.cc}: simulator {m:.2f} ± {h:.2f} (grid run {r['sim_goodput_mbps']:.2f}), "
                f"kernel {km:.2f} ± {r['emu_ci_mbps']:.2f}: {100 * diff:+.1f} %",
                flush=True,
            )
    print(f"{n5} of 36 rows within ±5 %, {n10} within ±10 %")


if __name__ == "__main__":
    main()
