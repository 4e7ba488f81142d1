"""Reruns both sides of the six lossy Reno/CUBIC rows of the independent grid (10 seeds per side,
as `mobipath fidelity --full --independent --seeds 10`; needs root and `mobipath-emu`), printing
each row with the 1-minute load average before and after it. Run from the repository root:
`python docs/fidelity/independent/kernel_rerun.py`. It prints what it measured."""

from mobipath.emulate import fidelity as fid

ROWS = [
    fid.Config(r, d, p, cc)
    for (r, d, p) in ((20, 50, 0.005), (50, 50, 0.01), (10, 20, 0.02))
    for cc in ("reno", "cubic")
]


def load() -> str:
    return open("/proc/loadavg").read().split()[0]


def main() -> None:
    n5 = 0
    for c in ROWS:
        before = load()
        r = fid.run_row(c, 15.0, 3.0, reduced=False, seeds=10, independent=True)
        n5 += abs(r.difference) <= 0.05
        print(
            f"{c.label} {c.cc}: simulator {r.sim_goodput_mbps:.2f} ± {r.sim_ci_mbps:.2f}, kernel "
            f"{r.emu_goodput_mbps:.2f} "
            f"± {r.emu_ci_mbps:.2f} ({100 * r.difference:+.1f} %), kernel runs "
            f"{[round(g, 2) for g in r.emu_goodputs]}, "
            f"load {before} -> {load()}",
            flush=True,
        )
    print(f"{n5} of {len(ROWS)} within ±5 %")


if __name__ == "__main__":
    main()
