"""Every `mobipath ...` command in the READMEs and the documentation site's pages (docs/), run as
written from an empty directory outside the repository through an installed mobipath (the
`installed` fixture: the wheel of scripts/check-install, else a copy of the package), in the order
the pages give them.

Each command found is one of:
- RUN: run exactly as written (a `&&` chain runs in order; all of them share one directory);
- SLOW: run as written when MOBIPATH_README_FULL=1 (scripts/check-install), else checked like HELP;
- GPSD: run as written against a fake gpsd on 127.0.0.1:2947 replaying the sample ride;
- checked only — the command exists and takes every `--flag` shown (in this process's command
  tree, which is the installed package's when MOBIPATH_INSTALLED_CLI is set): a synopsis (placeholders such
  as SCENARIO or [--seed N]), a bare command name, or a command listed in HELP_ONLY with the
  reason it is not run here.
A command in no class fails the test: add it to one.

The pages' ```python blocks run in a folder made by `mobipath examples`; their ```toml blocks must
parse, and those that hold a whole scenario (a top-level `duration_s`) must validate.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import shlex
import socket
import subprocess
import threading
from pathlib import Path

import pytest
from conftest import ROOT, cli_env

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11
    import tomli as tomllib

DOCS = [
    "README.md",
    "data/sample-ride/README.md",
    "python/mobipath/README.md",
    "python/mobipath/router/README.md",
    "CONTRIBUTING.md",
    # The documentation site's hand-written pages (the generated ones list the commands themselves).
    *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").rglob("*.md")),
]
LEARN_RECORDED = (
    "mobipath hotable learn-recorded --track data/sample-ride/track.csv --gps data/sample-ride/ride.nmea "
    "--handovers data/sample-ride/handovers.csv -o table.csv"
)
RUN = {
    "mobipath run scenarios/examples/mptcp-two-paths.toml --out results/mptcp",
    "mobipath plot results/mptcp",
    "mobipath examples my-examples",
    "mobipath examples --list",
    "mobipath schema",
    LEARN_RECORDED,
    "mobipath run scenarios/examples/hsr-two-operators.toml --out results/hsr",
    "mobipath plot results/hsr",
    "mobipath bench",
    "mobipath sweep scenarios/sweeps/cc-by-loss.toml",
    "mobipath sweep report sweeps/cc-by-loss --metric flows.newreno.goodput_mbps --plot sweeps/cc-by-loss/goodput.png",
    "mobipath recommend --path trace=data/hsr-traces/hsr-1529470787-lia-wlan16-U4.trace,delay=30 --path "
    "trace=data/hsr-traces/hsr-1529470787-lia-wlan3-M3.trace,delay=40 --goal file:20MB --duration 60",
    "mobipath bench scenarios/bench/lte-p4-20ue-60s.toml",
    "mobipath run --pcap scenarios/examples/mptcp-two-paths.toml --out out",
    "mobipath run --pcap scenarios/p0/hst-pha-d-minrtt.toml --out hst",
    # The README's figure.
    "mobipath run scenarios/p0/hst-minrtt.toml --out results/p0",
    "mobipath plot results/p0",
    "mobipath run scenarios/nr/hst-daps-minrtt.toml --out results/nr-daps",
    "mobipath reproduce nr --quick --out reports/nr-quick",
}
SLOW = {
    "mobipath reproduce nr",
    "mobipath reproduce p0",
    "mobipath reproduce p1",
    "mobipath reproduce p3",
    "mobipath reproduce p3 --quick --out reports/p3-quick",
}
GPSD = {
    "mobipath router pha-d --table table.csv --track data/sample-ride/track.csv --subflow A=1:wwan0 "
    "--subflow B=2:wwan1 --dry-run"
}
HELP_ONLY = {
    "mobipath compare scenarios/nr/hst-daps-minrtt.toml --substitute": "root and network namespaces "
    "(test_emulate.py runs compare; test_nr.py checks the links it is given)",
    "mobipath compare scenarios/nr/hst-hard-minrtt.toml --substitute": "root and network namespaces "
    "(test_emulate.py runs compare; test_nr.py checks the links it is given)",
    "mobipath reproduce pN": "a synopsis: pN is one of p0 ... p4",
    "mobipath run --seed N": "a synopsis of the flag",
    "mobipath emulate --proxy": "root, the whole proxy chain in real time; it runs in test_proxy_chain.py",
    "mobipath emulate scenarios/p0/hst-proxy.toml --proxy": "root, 24 real-time kernel runs of 26 s; "
    "the chain runs in test_proxy_chain.py",
    "mobipath compare scenarios/p0/hst-linux-default.toml": "root and network namespaces (test_emulate.py)",
    "mobipath emulate scenarios/p0/hst-proxy.toml --proxy --repeat 3": "root, 24 real-time kernel runs of 26 s; "
    "the chain runs in test_proxy_chain.py",
    "mobipath fidelity --full": "root, and a real-time grid of many minutes",
    "mobipath fidelity --full --seeds 10": "root, 118 real-time kernel runs (~30 min); the many-seed logic runs with "
    "stand-ins in test_fidelity_seeds.py and the reduced grid in test_emulate.py",
    "mobipath fidelity --full --independent --seeds 10": "root, 207 real-time kernel runs (~30 min); "
    "the reference path runs in test_independent.py",
    "mobipath fidelity --independent": "root, a real-time grid of many minutes; the reference path runs in "
    "test_independent.py",
    "mobipath fidelity --full --lossy-only --seeds 10 --out results/fid-seeds": "root, 180 real-time kernel runs (~30 "
    "min); "
    "the many-seed logic runs with stand-ins in test_fidelity_seeds.py",
    "mobipath reproduce p4": "810 runs, about a minute on 2 cores (more under load): too long for CI; its --quick form "
    "runs in test_reproduce_p4.py",
    "mobipath reproduce p2": "620 runs, about 1.5 minutes on 2 cores (more under load): too long for CI; its --quick "
    "form runs in test_reproduce_p2.py and the golden test",
    "mobipath bench --emulator": "measures this machine's emulator (root for its second half)",
    "mobipath bench --emulator --ceiling": "steps this machine's emulator up to 2 Gbit/s (root for its TUN half, "
    "about half a minute); the search itself runs against stand-ins in test_emulator_ceiling.py",
    "mobipath bench --repeat 10": "a measurement recipe: the benchmark ten times over",
    "mobipath bench --repeat 3": "a measurement recipe: the benchmark three times over",
    "mobipath bench --process": "times every benchmark scenario ten times as a whole process (minutes); "
    "test_startup.py runs it on one scenario",
    "mobipath bench --flows 1,100,1000,10000": "four runs of 20 s through a 1000 Mbit/s bottleneck, 10,000 flows "
    "among them (minutes); test_series.py runs --flows on two small counts",
    "mobipath bench --flows 1,100,1000": "three runs of 20 s through a 1000 Mbit/s bottleneck (a minute and "
    "more); test_series.py runs --flows on two small counts",
    "mobipath bench --process --flows 1,100,1000": "the whole command ten times per flow count (minutes); "
    "test_series.py runs --flows on two small counts",
    "mobipath bench --long": "a 1-hour train ride and a 100-UE cell (half a minute and more); test_startup.py checks "
    "which scenarios it adds",
    "time .venv/bin/mobipath reproduce p0 -j 2": "the timing recipe of the full P0 run "
    "(run as `mobipath reproduce p0`)",
    "mobipath router pha-d --config /etc/mobipath-proxy/router.toml --check": "a router's config file; "
    "scripts/check-install "
    "runs `router pha-d --config pha-d.toml --check` and test_proxy_cli.py the daemon's --config forms",
    "mobipath router pha-d --table table.csv --track data/sample-ride/track.csv --subflow A=1:wwan0 "
    "--subflow B=2:wwan1": "sets real MPTCP endpoint flags (root); its --dry-run form runs (GPSD)",
    "mobipath sweep scenarios/sweeps/cc-by-loss.toml --backend ray": "needs the ray extra; the Ray backend runs in "
    "test_sweep.py",
    "mobipath sweep scenarios/sweeps/cc-by-loss.toml --backend ray --ray-address ray://head:10001": "needs a Ray "
    "cluster; "
    "test_sweep.py runs a sweep through --ray-address on a two-node cluster it starts",
    "mobipath reproduce p0 --backend ray": "needs the ray extra; its --quick form runs in test_sweep.py",
    "mobipath bench --sweep": "measures this machine (minutes, with a local Ray when installed)",
    "mobipath router cell-log --modem A=0 --modem B=1 -o cells.csv": "needs ModemManager and modems on the system bus; "
    "test_cell_log.py runs cell-log against a stand-in ModemManager on a private D-Bus",
    "mobipath router handover-log --cells cells.csv -o handovers.csv": "needs a drive's cell log; "
    "scripts/check-install "
    "runs it on one it writes, test_cell_log.py on one cell-log recorded",
    "mobipath sweep report": "a command named in prose; its whole form runs (RUN)",
    "mobipath sweep report … --plot": "a command named in prose; its whole form runs (RUN)",
    "mobipath bench --sweep --repeat 3": "measures this machine three times over (minutes); test_sweep.py runs the "
    "benchmark on 40 runs",
}
FULL = os.environ.get("MOBIPATH_README_FULL") == "1"
PLACEHOLDER = re.compile(r"\[|\b[A-Z][A-Z_]{1,}\b")


def documented() -> tuple[list[str], list[str], list[str]]:
    """(commands, python blocks, toml blocks) of DOCS in order, whitespace collapsed, `&&` chains split."""
    commands: list[str] = []
    python: list[str] = []
    toml: list[str] = []
    for doc in DOCS:
        text = (ROOT / doc).read_text(encoding="utf-8")
        pieces: list[str] = []
        for m in re.finditer(r"```(\w*)\n(.*?)```|(?<!`)`([^`]+)`(?!`)", text, flags=re.S):
            if m.group(3) is not None:
                pieces.append(m.group(3))
            elif m.group(1) == "python":
                python.append(m.group(2))
            elif m.group(1) == "toml":
                toml.append(m.group(2))
            elif m.group(1) in ("bash", "sh", ""):
                pieces += m.group(2).splitlines()
        for piece in pieces:
            for part in " ".join(piece.split()).split(" && "):
                part = part.split(" #")[0].strip()
                if re.match(r"^(time )?(\S*/bin/)?mobipath \S", part) and part not in commands:
                    commands.append(part)
    return commands, python, toml


COMMANDS, PYTHON, TOML = documented()


def words(cmd: str) -> list[str]:
    w = shlex.split(cmd)
    while w and not w[0].endswith("mobipath"):
        w.pop(0)  # `time`
    return w[1:]


def command_path(args: list[str]) -> list[str]:
    """The longest prefix of `args` naming a (sub)command (from the command tree in this process)."""
    import typer
    from mobipath.cli import app

    cmd, path = typer.main.get_command(app), []
    for a in args:
        sub = (getattr(cmd, "commands", None) or {}).get(a)
        if sub is None:
            break
        cmd, path = sub, path + [a]
    return path


def classify(cmd: str) -> str:
    if cmd in RUN:
        return "run"
    if cmd in SLOW:
        return "run" if FULL else "help"
    if cmd in GPSD:
        return "gpsd"
    if cmd in HELP_ONLY or PLACEHOLDER.search(cmd):
        return "help"
    args = words(cmd)
    path = command_path(args)
    if args and path and all(a.startswith("-") for a in args[len(path) :]):
        return "help"  # a bare command name, perhaps with flags (`mobipath run --pcap`)
    return "unclassified"


def check_help(cmd: str) -> None:
    from mobipath.cli import app
    from typer.testing import CliRunner

    # A synopsis's alternatives (`reproduce p0|p1|p2`): the first stands for all.
    args = [w.split("|")[0] if "|" in w and not w.startswith("-") else w for w in words(cmd)]
    path = command_path(args)
    assert path, f"`{cmd}`: no such command"
    r = CliRunner().invoke(app, path + ["--help"], terminal_width=200)
    assert r.exit_code == 0, r.output
    for flag in re.findall(r"(?<![\w-])(--?[a-zA-Z][\w-]*)", " ".join(args[len(path) :])):
        assert re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", r.output), f"`{cmd}`: {' '.join(path)} has no {flag}"


class FakeGpsd:
    """gpsd on 127.0.0.1:2947 (another port if that is taken): greets, reads ?WATCH, sends one TPV
    per fix of an NMEA log, then closes."""

    def __init__(self, nmea: Path):
        self.lines = [json.dumps(tpv).encode() + b"\n" for tpv in tpv_reports(nmea)]
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self.sock.bind(("127.0.0.1", 2947))
        except OSError:
            self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.sock.listen(1)
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self) -> None:
        conn, _ = self.sock.accept()
        with conn:
            conn.sendall(b'{"class":"VERSION","release":"3.25","proto_major":3,"proto_minor":15}\n')
            conn.settimeout(10)
            buf = b""
            while b"\n" not in buf:
                chunk = conn.recv(4096)
                if not chunk:
                    return
                buf += chunk
            conn.sendall(b"".join(self.lines))
        self.sock.close()


def tpv_reports(nmea: Path) -> list[dict]:
    """gpsd TPV reports for the GGA fixes of an NMEA log (date from its RMC sentences)."""
    date = next(line.split(",")[9] for line in nmea.read_text().splitlines() if line[3:6] == "RMC")
    day = dt.datetime.strptime(date, "%d%m%y").replace(tzinfo=dt.timezone.utc)
    out = []
    for line in nmea.read_text().splitlines():
        f = line.split("*")[0].split(",")
        if f[0][3:] != "GGA":
            continue
        t = day + dt.timedelta(hours=int(f[1][:2]), minutes=int(f[1][2:4]), seconds=float(f[1][4:]))
        lat = (int(f[2][:2]) + float(f[2][2:]) / 60) * (1 if f[3] == "N" else -1)
        lon = (int(f[4][:3]) + float(f[4][3:]) / 60) * (1 if f[5] == "E" else -1)
        out.append(
            {"class": "TPV", "mode": 3, "time": t.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z", "lat": lat, "lon": lon}
        )
    return out


def test_every_documented_command_is_classified():
    assert len(COMMANDS) > 10 and set(COMMANDS) >= RUN | GPSD, sorted((RUN | GPSD) - set(COMMANDS))
    bad = [c for c in COMMANDS if classify(c) == "unclassified"]
    assert not bad, f"README commands neither run nor checked by this test (add them to RUN/SLOW/HELP_ONLY): {bad}"


def test_documented_commands_run_as_written(installed):
    cli, env, work = installed
    cwd = work / "readme"
    cwd.mkdir()
    for cmd in COMMANDS:
        mode = classify(cmd)
        if mode == "help":
            check_help(cmd)
        elif mode == "run":
            r = subprocess.run(cli + words(cmd), cwd=cwd, capture_output=True, text=True, env=cli_env(env), timeout=900)
            assert r.returncode == 0, f"`{cmd}` failed:\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}"
        elif mode == "gpsd":
            fake = FakeGpsd(cwd / "my-examples" / "data/sample-ride/ride.nmea")
            extra = [] if fake.port == 2947 else ["--gpsd", f"127.0.0.1:{fake.port}"]
            # The daemon reconnects to gpsd forever; the test bounds it: once the ride is over and
            # gpsd gone, it gives up (exit 1) with every endpoint regular.
            extra += ["--max-retries", "0", "--retry-s", "0.1"]
            r = subprocess.run(
                cli + words(cmd) + extra, cwd=cwd, capture_output=True, text=True, env=cli_env(env), timeout=120
            )
            assert r.returncode == 1 and "every endpoint is regular" in r.stderr, r.stderr
            lines = [json.loads(line) for line in r.stdout.splitlines()]
            safe = [e["reason"] for e in lines if e.get("failsafe") == "restored"]
            assert (
                safe[0] == "start"
                and any("gpsd closed the connection" in x for x in safe)
                and safe[-1] == "gave up on gpsd"
            ), safe
            events = [e for e in lines if "failsafe" not in e]
            for endpoint in (1, 2):
                flags = [e["backup"] for e in events if e["endpoint_id"] == endpoint]
                assert len(flags) >= 4 and flags[::2] == [True] * len(flags[::2]) and not any(flags[1::2]), events
        else:
            pytest.fail(f"`{cmd}` is unclassified")
    # what the commands promised to write
    for f in (
        "results/mptcp/flow-mptcp.png",
        "results/hsr/flow-mptcp.png",
        "table.csv",
        "my-examples/scenarios/examples/hsr-two-operators.toml",
    ):
        assert (cwd / f).is_file(), f
    if FULL:
        assert (cwd / "reports/p0/report.md").is_file() and (cwd / "reports/p1/report.md").is_file()


def test_documented_python_and_toml_examples_run(installed):
    cli, env, work = installed
    examples = work / "python-examples"
    r = subprocess.run(cli + ["examples", str(examples)], capture_output=True, text=True, env=cli_env(env))
    assert r.returncode == 0, r.stderr
    assert PYTHON and TOML
    python = [str(Path(cli[0]).with_name("python"))] if len(cli) == 1 else cli[:1]
    for code in PYTHON:
        r = subprocess.run(
            python + ["-c", code], cwd=examples, capture_output=True, text=True, env=cli_env(env), timeout=300
        )
        assert r.returncode == 0, f"{code}\n{r.stderr[-2000:]}"
    for i, text in enumerate(TOML):
        table = tomllib.loads(text)  # every block must at least be TOML
        if re.search(r"^\[axes\]", text, flags=re.M):
            continue  # a sweep file, not a scenario: test_sweep.py checks the README's against scenarios/sweeps/
        if "duration_s" not in table:
            continue  # a fragment (one table of a scenario, a router's config): parsed above
        f = examples / f"readme-{i}.toml"
        f.write_text(text)
        r = subprocess.run(cli + ["validate", str(f)], capture_output=True, text=True, env=cli_env(env))
        assert r.returncode == 0, f"{text}\n{r.stdout}"
