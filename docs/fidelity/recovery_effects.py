"""The effect of each loss-recovery mechanism of the simulator's sender (RACK, TLP, F-RTO, undo)
on the fidelity grid's rows with random loss, against the kernel.

Reads the kernel side from a many-seed fidelity report (`mobipath fidelity --full --lossy-only
--seeds N --out DIR` writes DIR/fidelity.json with every run's goodput), runs the simulator on the
same rows with seeds 1..N once per variant (all on = the default, each mechanism off alone, all
off) and prints a Markdown table: simulator mean ± 95 % CI per variant, its difference from the
kernel mean, whether the CIs overlap, and the counts within ±5 % / ±10 %.

    python docs/fidelity/recovery_effects.py results/fid-seeds/fidelity.json > docs/fidelity/recovery-effects.md
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from mobipath import _core
from mobipath.emulate import fidelity as fid
from mobipath.results import Result
from mobipath.source import ScenarioSource

VARIANTS = {
    "all on (default)": "",
    "rack off": "rack = false",
    "tlp off": "tlp = false",
    "frto off": "frto = false",
    "undo off": "undo = false",
    "all off": "rack = false, tlp = false, frto = false, undo = false",
}


def simulate(text: str) -> float:
    """Goodput of flow "f" (the scenario as written: the emulator's kernel-equivalent plan would
    refuse the `[flows.tcp]` switches, which the kernel does not have)."""
    seed = int(re.search(r"^seed = (\d+)$", text, re.M).group(1))
    src = ScenarioSource(text, "<string>", Path("."))
    raw = _core.run(text, src.file, str(src.base_dir), seed, None)
    return Result.from_raw(raw, src, seed).summary["flows"]["f"]["goodput_mbps"]


def main(path: str) -> None:
    rep = json.loads(Path(path).read_text())
    seconds, warmup = rep["seconds"], rep["warmup_s"]
    rows = [r for r in rep["rows"] if r.get("emu_goodputs")]
    n = len(rows[0]["emu_goodputs"])
    counts = {v: [0, 0, 0] for v in VARIANTS}
    out = [
        f"Kernel: Linux {rep['kernel']}, {n} runs per row (seeds "
        f"{fid.KERNEL_SEED_BASE + 1}–{fid.KERNEL_SEED_BASE + n}), "
        f"from `{path}`; simulator: seeds 1–{n} per variant; {seconds:g} s runs, {warmup:g} s warm-up. Cells: "
        "simulator "
        "goodput mean ± 95 % CI (Mbit/s) and its difference from the kernel mean.",
        "",
        "| link | cc | kernel | " + " | ".join(VARIANTS) + " |",
        "|---|---|---:|" + "---:|" * len(VARIANTS),
    ]
    for r in rows:
        c = fid.Config(**{k: r["config"][k] for k in ("rate_mbps", "delay_ms", "loss", "cc", "paths")})
        em, eh = fid.mean_ci(r["emu_goodputs"])
        cells = []
        for v, tcp in VARIANTS.items():
            xs = [simulate(fid.scenario(c, seconds, warmup, seed=k, tcp=tcp)) for k in range(1, n + 1)]
            sm, sh = fid.mean_ci(xs)
            d = (sm - em) / em
            overlap = sm - sh <= em + eh and em - eh <= sm + sh
            cnt = counts[v]
            cnt[0] += abs(d) <= 0.05
            cnt[1] += abs(d) <= 0.10
            cnt[2] += overlap
            cells.append(f"{sm:.2f} ± {sh:.2f} ({d * 100:+.1f} %{'' if overlap else ', CIs apart'})")
        out.append(f"| {c.label} | {c.cc} | {em:.2f} ± {eh:.2f} | " + " | ".join(cells) + " |")
    out.append("")
    for v, (a, b, o) in counts.items():
        out.append(
            f"- {v}: {a}/{len(rows)} rows within ±5 %, {b}/{len(rows)} within ±10 %, CIs overlap on {o}/{len(rows)}"
        )
    print("\n".join(out))


if __name__ == "__main__":
    main(sys.argv[1])
