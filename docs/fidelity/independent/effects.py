"""Effect of each receiver and sender mechanism (ACK on read, DSACK undo, TSO, auto-tuning) on the
grid's lossy rows (simulator side only; the kernel
side is the grid run's, read from fidelity.json, not rerun). For each lossy row: the simulator's
10-seed mean with everything at its default, then with one mechanism switched (ACK on read off,
DSACK off, TSO off, receive-buffer auto-tuning on), each compared with the kernel mean. Same
scenarios and seeds as the grid (simulator seeds 1..N). Run from the repository root:
`python docs/fidelity/independent/effects.py`. It prints what it measured."""

import json
from pathlib import Path

from mobipath import api
from mobipath.emulate import fidelity as fid

HERE = Path(__file__).resolve().parent
BULK = 'traffic = { kind = "bulk" }'
VARIANTS = [
    ("as run", "", ""),
    ("ack_on_read off", "", "ack_on_read = false"),
    ("dsack off", "dsack = false", ""),
    ("tso off", "tso = false", ""),
    ("autotune on", "", "autotune = true"),
]


def main() -> None:
    d = json.loads((HERE / "fidelity.json").read_text())
    for r in d["rows"]:
        cfg = r["config"]
        if cfg.get("paths", 1) != 1 or cfg["loss"] == 0:
            continue
        c = fid.Config(cfg["rate_mbps"], cfg["delay_ms"], cfg["loss"], cfg["cc"])
        km, kh = r["emu_goodput_mbps"], r["emu_ci_mbps"]
        for name, tcp, rcv in VARIANTS:
            extra = f"\nreceiver = {{ {rcv} }}" if rcv else ""
            runs = []
            for k in range(1, r["seeds"] + 1):
                sc = fid.scenario(c, d["seconds"], d["warmup_s"], seed=k, tcp=tcp, independent=True)
                runs.append(api.run(sc.replace(BULK, BULK + extra)).summary["flows"]["f"])
            m, h = fid.mean_ci([f["goodput_mbps"] for f in runs])
            acks = sum(f["acks_sent"] for f in runs) / sum(f["segments_sent"] for f in runs)
            timer = sum(f["delayed_acks"] for f in runs) / len(runs)
            print(
                f"{c.label} {c.cc} {name}: simulator {m:.2f} ± {h:.2f}, kernel {km:.2f} ± {kh:.2f}: "
                f"{100 * (m - km) / km:+.1f} %; {acks:.2f} ACKs per segment, {timer:.1f} delayed-ACK "
                f"timer expiries per run",
                flush=True,
            )


if __name__ == "__main__":
    main()
