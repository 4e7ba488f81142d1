"""Router components: what runs on a real Linux MPTCP router (`mobipath router ...`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Optional

import typer

# rich_markup_mode=None: help texts are plain text, as in cli.py.
app = typer.Typer(help="Components for a real Linux MPTCP router.", no_args_is_help=True, rich_markup_mode=None)


from . import proxy as _proxy  # noqa: E402

app.command("proxy", epilog=_proxy.CONFIG_HELP)(_proxy.router_proxy)


@app.command("pha-d")
def pha_d(
    config: Optional[Path] = typer.Option(
        None,
        "--config",
        "-c",
        help="Run the Rust daemon (mobipath-proxy pha-d) with this TOML config ([pha_d], and [router] to run the "
        "router proxy in the same process; the format: `mobipath router proxy --help`). The other options are then "
        "not used.",
        show_default=False,
    ),
    check: bool = typer.Option(
        False,
        "--check",
        help="With --config: only validate the config (exit 0 if valid, 2 with the field named if not).",
    ),
    table: Optional[Path] = typer.Option(
        None,
        "--table",
        help="Python controller: handover table CSV (`mobipath hotable learn` / `learn-recorded`).",
        show_default=False,
    ),
    track: Optional[Path] = typer.Option(
        None,
        "--track",
        help="Python controller: the line's track, a lat,lon CSV polyline (same as learn-recorded).",
        show_default=False,
    ),
    subflow: Optional[list[str]] = typer.Option(
        None,
        "--subflow",
        help="Python controller: OPERATOR=ENDPOINT_ID[:IFACE], once per uplink, e.g. A=1:wwan0.",
        show_default=False,
    ),
    gpsd: str = typer.Option("127.0.0.1:2947", "--gpsd", help="gpsd's HOST:PORT."),
    policy: str = typer.Option(
        "paper",
        "--policy",
        help="paper (B=1 one RTT ahead), queue-aware (plus --lead-ms) or resend (B=0 re-sent until data flows).",
    ),
    lead_ms: float = typer.Option(0.0, "--lead-ms", min=0, max=10000, help="queue-aware: extra lead of B=1 in ms."),
    rtt_ms: float = typer.Option(
        100.0,
        "--rtt-ms",
        help="Path RTT to the proxy in ms (e.g. from ping), in (0, 10000]; with --rtt-from, used only where no "
        "measurement exists.",
    ),
    rtt_from: Optional[str] = typer.Option(
        None,
        "--rtt-from",
        help="The proxy's metrics URL (mobipath router proxy, [metrics] listen, e.g. http://127.0.0.1:9464/metrics): "
        "each subflow's RTT as the kernel measures it on the proxy's connections from that endpoint's address, "
        "read at each fix.",
        show_default=False,
    ),
    gps_period_ms: float = typer.Option(
        1000.0, "--gps-period-ms", help="The GPS receiver's fix period in ms, in (0, 10000]."
    ),
    max_offset_m: float = typer.Option(
        50.0, "--max-offset-m", min=0, help="Fixes farther than this from the track are ignored."
    ),
    tick_ms: float = typer.Option(
        50.0,
        "--tick-ms",
        min=0,
        max=1000,
        help="Also decide this often between fixes, from the extrapolated position (0 = at fixes only).",
    ),
    netns: Optional[str] = typer.Option(None, "--netns", help="Apply the flags in this network namespace."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the decisions without touching the endpoints."),
    max_fixes: Optional[int] = typer.Option(
        None, "--max-fixes", min=1, help="Stop after this many fixes (default: run until stopped)."
    ),
    stale_s: float = typer.Option(
        3.0,
        "--stale-s",
        min=0.1,
        max=60.0,
        help="Fail safe (every endpoint regular) when no usable fix came for this long.",
    ),
    min_interval_ms: float = typer.Option(
        1000.0,
        "--min-interval-ms",
        min=0.0,
        max=60000.0,
        help="At most one B=1 per endpoint this often (B=0 is never held back).",
    ),
    retry_s: float = typer.Option(
        2.0, "--retry-s", min=0.1, max=600.0, help="After gpsd goes away or fails: reconnect after this long."
    ),
    max_retries: Optional[int] = typer.Option(
        None,
        "--max-retries",
        min=0,
        help="Give up (exit 1) after this many failed gpsd sessions in a row (default: never).",
    ),
) -> None:
    """PHA-D on the train router: marks the subflow of the operator about to hand over as backup
    (MP_PRIO via the endpoint's backup flag) from live GPS positions and a handover table, and
    clears it before the range ends. Prints one JSON line per MP_PRIO. Fails safe: every endpoint
    regular at start, on a stale or off-track fix, when the GPS fails, on any error, on exit and on
    SIGTERM/SIGHUP/SIGINT; never every endpoint backup at once.

    With --config it runs the Rust daemon (mobipath-proxy pha-d: inside the router proxy, kernel
    RTT and queue per subflow, gpsd / NMEA serial, file, UDP / replay). Without it, the Python
    controller (the simulator's own, gpsd only) with the options below; it alone has --dry-run."""
    from ..cli import _guarded, input_file  # late import: cli imports this module

    if config is not None:
        from .proxy import exec_proxy

        exec_proxy(
            ["check-config", "--side", "pha-d", "--config", str(config)]
            if check
            else ["pha-d", "--config", str(config)]
        )
    if table is None or track is None or not subflow:
        missing = [n for n, v in (("--table", table), ("--track", track), ("--subflow", subflow)) if not v]
        raise typer.BadParameter(
            f"give --config FILE (the Rust daemon), or {', '.join(missing)} for the Python controller"
        )
    table_file, track_file, subflows = input_file(table), input_file(track), subflow

    def go() -> None:
        from .. import gpsd as gps
        from .phad import (
            FailSafeActuator,
            NetlinkActuator,
            PhaDRouter,
            ProxyRtt,
            RecordingActuator,
            RouterError,
            default_actuator,
            ip_rx_packets,
            parse_subflow,
        )

        try:
            specs = [parse_subflow(s) for s in subflows]
            if not 0 < gps_period_ms <= 10000:
                raise RouterError(f"--gps-period-ms {gps_period_ms:g}: must be in (0, 10000]")
            host, _, port_s = gpsd.rpartition(":")
            if not host or not port_s.isdigit() or not 0 < int(port_s) < 65536:
                raise RouterError(f"--gpsd {gpsd!r}: expected HOST:PORT with a port in 1..65535")
            trk = gps.Track.from_csv(track_file)
            rx = (lambda s: ip_rx_packets(s.iface, netns)) if any(s.iface for s in specs) else None

            def log(ev: dict) -> None:
                print(json.dumps(ev, sort_keys=True), flush=True)

            actuator = FailSafeActuator(
                RecordingActuator() if dry_run else default_actuator(netns),
                [s.endpoint_id for s in specs],
                min_interval_s=min_interval_ms / 1e3,
                log=log,
            )
            rtt_source = None
            if rtt_from is not None:
                if not rtt_from.startswith(("http://", "https://")):
                    raise RouterError(f"--rtt-from {rtt_from!r}: expected an http:// URL of the proxy's metrics")
                addrs = NetlinkActuator(netns).addresses()
                missing = [s.endpoint_id for s in specs if s.endpoint_id not in addrs]
                if missing:
                    raise RouterError(
                        f"--rtt-from: no MPTCP endpoint with id {missing} to match the proxy's subflows by address"
                    )
                rtt_source = ProxyRtt(rtt_from, addrs, [s.endpoint_id for s in specs])
            router = PhaDRouter(
                table_file.read_text(encoding="utf-8"),
                specs,
                actuator,
                policy=policy,
                lead_ms=lead_ms,
                gps_period_s=gps_period_ms / 1e3,
                rtt_s=rtt_ms / 1e3,
                rx_packets=rx,
                log=log,
                table_file=str(table_file),
                rtt_source=rtt_source,
            )
            router.stale_s = stale_s
            # Rate-limit on PHA-D's decision time (it follows the GPS fixes), not the wall clock.
            actuator.clock = lambda: router.last_t
        except (RouterError, ValueError) as e:  # ValueError: the track file
            raise typer.BadParameter(str(e)) from None
        run_failsafe(
            router,
            actuator,
            lambda: gps.GpsdClient(host, int(port_s), timeout=2 * stale_s + 1),
            lambda c: c.track_positions(trk, max_offset_m),
            max_fixes,
            tick_ms / 1e3 if tick_ms > 0 else None,
            retry_s,
            max_retries,
        )

    _guarded(go)()


@app.command("handover-log")
def handover_log(
    cells: list[Path] = typer.Option(
        [], "--cells", help="Cell-id log CSV `time,operator,cell` (repeatable).", show_default=False
    ),
    mmcli: list[str] = typer.Option(
        [],
        "--mmcli",
        help="OPERATOR=FILE: repeated `mmcli -m N --location-get` outputs, each after a line with its time "
        "(repeatable, one per modem).",
        show_default=False,
    ),
    out: Path = typer.Option(
        ...,
        "-o",
        "--out",
        help="Handover log to write, `operator,start,end` (the --handovers of `mobipath hotable learn-recorded`).",
        show_default=False,
    ),
    append: bool = typer.Option(
        False, "--append", help="Add this drive's rows to an existing log instead of overwriting it."
    ),
) -> None:
    """The handover logger: serving-cell changes recorded on the train (a cell-id log, or
    ModemManager's mmcli output) -> the handover log `operator,start,end` that `mobipath hotable
    learn-recorded` learns tables from, with the same run's NMEA log. Each handover spans from the
    last observation of the old cell to the first of the new one."""
    from ..cli import _guarded  # late import: cli imports this module

    def go() -> None:
        from ..errors import ConfigError, ScenarioError
        from . import holog

        if not cells and not mmcli:
            raise ScenarioError([ConfigError("--cells", "", "give at least one --cells or --mmcli log")])
        obs = []
        for c in cells:
            obs += holog.parse_cell_log(c.read_text(encoding="utf-8", errors="replace"), str(c))
        for spec in mmcli:
            op, sep, f = spec.partition("=")
            if not sep or not f:
                raise ScenarioError([ConfigError("--mmcli", spec, "expected OPERATOR=FILE, e.g. A=mmcli-a.log")])
            obs += holog.parse_mmcli(Path(f).read_text(encoding="utf-8", errors="replace"), f, op)
        rows = holog.handovers(obs)
        if append and out.exists() and out.stat().st_size > 0:
            with out.open("a", encoding="utf-8") as fh:
                fh.write(holog.to_csv(rows, header=False))
        else:
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(holog.to_csv(rows), encoding="utf-8")
        ops = sorted({r[0] for r in rows})
        typer.echo(
            f"{len(rows)} handovers ({', '.join(ops) or 'none'}) from {len(obs)} observations "
            f"{'appended to' if append else 'written to'} {out}"
        )

    _guarded(go)()


@app.command("cell-log")
def cell_log(
    modem: list[str] = typer.Option(
        [],
        "--modem",
        help="OPERATOR=MODEM: ModemManager's modem index (as `mmcli -L` lists it) or object path, once per modem, e.g. "
        "A=0.",
        show_default=False,
    ),
    out: Path = typer.Option(
        ...,
        "-o",
        "--out",
        help="Cell-id log to write, `time,operator,cell` (the --cells of `mobipath router handover-log`).",
        show_default=False,
    ),
    interval: float = typer.Option(
        1.0,
        "--interval",
        min=0.05,
        max=60.0,
        help="Seconds between polls of each modem, in [0.05, 60]: each handover's logged span is at most this much "
        "longer than the real one.",
    ),
    seconds: Optional[float] = typer.Option(
        None, "--seconds", min=0.0, help="Stop after this long (default: run until SIGINT/SIGTERM).", show_default=False
    ),
    bus: Optional[str] = typer.Option(
        None, "--bus", help="D-Bus address of ModemManager's bus (default: the system bus).", show_default=False
    ),
    append: bool = typer.Option(False, "--append", help="Add to an existing log instead of overwriting it."),
) -> None:
    """The live cell-id logger: each modem's serving cell read from ModemManager over D-Bus
    (`org.freedesktop.ModemManager1.Modem.Location`) every --interval seconds, written as the
    cell-id log that `mobipath router handover-log --cells` turns into a handover log. Record the
    GPS beside it (e.g. `gpspipe -r > run.nmea`). Needs `pip install 'mobipath[router]'`."""
    from ..cli import _guarded  # late import: cli imports this module

    def go() -> None:
        from ..errors import ScenarioError
        from . import mmdbus

        try:
            mmdbus.parse_modem_specs(modem)
        except ScenarioError as e:
            raise typer.BadParameter(str(e)) from None
        rows = mmdbus.run(modem, out, interval, seconds, bus, append)
        typer.echo(f"{rows} observations {'appended to' if append else 'written to'} {out}")

    _guarded(go)()


class _Signal(Exception):
    """A catchable signal asked PHA-D to stop (handled like any exit: every endpoint regular)."""


def run_failsafe(router, actuator, connect, positions, max_fixes, tick_s, retry_s, max_retries) -> None:
    """PHA-D's session loop with its fail-safe guarantees (router/README.md): every endpoint
    regular before the first decision, after every gpsd failure (then reconnect after `retry_s`,
    up to `max_retries` failed sessions in a row), and on the way out whatever the cause —
    normal end, error, SIGTERM, SIGHUP, SIGINT."""
    import signal
    import time

    from .. import gpsd as gps
    from ..cli import _fail

    def on_signal(signum, _frame):
        raise _Signal(signal.Signals(signum).name)

    old = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGTERM, signal.SIGHUP)}
    reason = "exit"
    fixes = 0
    try:
        actuator.restore_all("start")
        failures = 0
        while max_fixes is None or fixes < max_fixes:
            try:
                with connect() as client:
                    n = router.run(positions(client), None if max_fixes is None else max_fixes - fixes, tick_s)
                fixes += n
                failures = 0 if n else failures + 1
                if max_fixes is not None and fixes >= max_fixes:
                    break
                router.reset("gpsd ended the session")
            except (gps.GpsdError, OSError) as e:
                router.reset(f"gpsd: {e}")
                failures += 1
            if max_retries is not None and failures > max_retries:
                reason = "gave up on gpsd"
                raise _fail(f"gpsd failed {failures} times in a row; every endpoint is regular")
            time.sleep(retry_s)
        print(f"{fixes} fixes, {router.applied} MP_PRIO", file=sys.stderr)
    except _Signal as e:
        reason = f"signal {e}"
    except KeyboardInterrupt:
        reason = "signal SIGINT"
        raise
    except typer.Exit:
        raise
    except Exception as e:
        reason = f"error: {e}"
        raise
    finally:
        actuator.restore_all(reason)
        for sig, h in old.items():
            signal.signal(sig, h)
