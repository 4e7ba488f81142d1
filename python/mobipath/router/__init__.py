"""Router components: what runs on a real Linux MPTCP router (`mobipath router ...`)."""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import List, Optional

import typer

# rich_markup_mode=None: help texts are plain text, as in cli.py.
app = typer.Typer(help="Components for a real Linux MPTCP router.", no_args_is_help=True, rich_markup_mode=None)


@app.command("pha-d")
def pha_d(
    table: Path = typer.Option(..., "--table", help="Handover table CSV (`mobipath hotable learn` / `learn-recorded`).", show_default=False),
    track: Path = typer.Option(..., "--track", help="The line's track, a lat,lon CSV polyline (same as learn-recorded).", show_default=False),
    subflow: List[str] = typer.Option(..., "--subflow", help="OPERATOR=ENDPOINT_ID[:IFACE], once per uplink, e.g. A=1:wwan0.", show_default=False),
    gpsd: str = typer.Option("127.0.0.1:2947", "--gpsd", help="gpsd's HOST:PORT."),
    policy: str = typer.Option("paper", "--policy", help="paper (B=1 one RTT ahead), queue-aware (plus --lead-ms) or resend (B=0 re-sent until data flows)."),
    lead_ms: float = typer.Option(0.0, "--lead-ms", min=0, max=10000, help="queue-aware: extra lead of B=1 in ms."),
    rtt_ms: float = typer.Option(100.0, "--rtt-ms", help="Path RTT to the proxy in ms (e.g. from ping), in (0, 10000]."),
    gps_period_ms: float = typer.Option(1000.0, "--gps-period-ms", help="The GPS receiver's fix period in ms, in (0, 10000]."),
    max_offset_m: float = typer.Option(50.0, "--max-offset-m", min=0, help="Fixes farther than this from the track are ignored."),
    tick_ms: float = typer.Option(50.0, "--tick-ms", min=0, max=1000, help="Also decide this often between fixes, from the extrapolated position (0 = at fixes only)."),
    netns: Optional[str] = typer.Option(None, "--netns", help="Apply the flags in this network namespace."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the decisions without touching the endpoints."),
    max_fixes: Optional[int] = typer.Option(None, "--max-fixes", min=1, help="Stop after this many fixes (default: run until gpsd closes)."),
) -> None:
    """PHA-D on the train router: marks the subflow of the operator about to hand over as backup
    (MP_PRIO via the endpoint's backup flag) from live gpsd positions and a handover table, and
    clears it before the range ends. Prints one JSON line per MP_PRIO."""
    from ..cli import _guarded, input_file  # late import: cli imports this module

    def go() -> None:
        from .. import gpsd as gps

        table_file, track_file = input_file(table), input_file(track)
        from .phad import EndpointActuator, PhaDRouter, RecordingActuator, RouterError, ip_rx_packets, parse_subflow

        try:
            specs = [parse_subflow(s) for s in subflow]
            if not 0 < gps_period_ms <= 10000:
                raise RouterError(f"--gps-period-ms {gps_period_ms:g}: must be in (0, 10000]")
            host, _, port_s = gpsd.rpartition(":")
            if not host or not port_s.isdigit() or not 0 < int(port_s) < 65536:
                raise RouterError(f"--gpsd {gpsd!r}: expected HOST:PORT with a port in 1..65535")
            trk = gps.Track.from_csv(track_file)
            actuator = RecordingActuator() if dry_run else EndpointActuator(netns)
            rx = (lambda s: ip_rx_packets(s.iface, netns)) if any(s.iface for s in specs) else None

            def log(ev: dict) -> None:
                print(json.dumps(ev, sort_keys=True), flush=True)

            router = PhaDRouter(table_file.read_text(encoding="utf-8"), specs, actuator, policy=policy, lead_ms=lead_ms,
                                gps_period_s=gps_period_ms / 1e3, rtt_s=rtt_ms / 1e3, rx_packets=rx, log=log,
                                table_file=str(table_file))
            with gps.GpsdClient(host, int(port_s)) as client:
                n = router.run(client.positions(trk, max_offset_m), max_fixes, tick_ms / 1e3 if tick_ms > 0 else None)
            print(f"{n} fixes, {len(router.events)} MP_PRIO", file=sys.stderr)
        except (RouterError, ValueError) as e:  # ValueError: the track file
            raise typer.BadParameter(str(e)) from None

    _guarded(go)()
