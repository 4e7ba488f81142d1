"""Where a grid's runs execute: the sweep engine's executor, shared by `mobipath sweep`, every
`mobipath reproduce` command (through `experiments.common.run_all`) and `mobipath recommend`.

Two backends, one contract — `execute(todo, job, args, done, backend)` runs `job(*args(key))` for
every key and calls `done(key, result)` in the driving process as each run finishes (in whatever
order), so the caller alone writes datasets (and caches, except that local workers may keep their
own results: `keep`):

- ``local``: worker processes on this machine (`jobs`, default all cores; 1 = in this process).
- ``ray``: tasks on a Ray cluster (``address``, e.g. ``ray://head:10001`` or ``auto``), or on a
  local Ray instance started for the call when no address is given (a Ray this process has
  already initialised, e.g. in a notebook, is used as it is). Workers need mobipath
  installed but no shared file system: a task carries its scenario, and the files the scenario
  references travel with it as bytes (see `ship_args`). Ray is an optional dependency
  (``pip install 'mobipath[ray]'``).

Results are keyed, never positional, so neither the backend nor the number of workers changes a
number.
"""

from __future__ import annotations

import contextlib
import hashlib
import multiprocessing
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from .files import read_bytes as _read_bytes

BACKENDS = ("local", "ray")


class BackendError(Exception):
    """A backend cannot be used (Ray missing, cluster unreachable, unknown backend)."""


class WorkerDied(RuntimeError):
    """A local worker process died while running (not an error of the run: that comes back as
    the run's exception)."""


class RunFailed(RuntimeError):
    """A run raised an exception: what crosses back from the worker process or Ray task is the
    exception's type name and message as plain text (`kind`, `message`), never the exception
    object. An object would have to be pickled there and rebuilt here, which fails for a class
    this process cannot import by the worker's name (the simulator extension's own errors) or an
    exception holding what cannot be pickled, and the run's real error was lost behind a
    PicklingError. A scenario error keeps its structure instead (`portable`)."""

    def __init__(self, kind: str, message: str, key: Any = None) -> None:
        self.kind, self.message, self.key = kind, message, key
        where = f"run {key!r}: " if key is not None else ""
        super().__init__(f"{where}{kind}: {message}")

    def __reduce__(self):  # type: ignore[override]
        return (RunFailed, (self.kind, self.message, self.key))


def portable(e: BaseException, key: Any = None) -> BaseException:
    """`e` in a form that crosses a process boundary intact: a scenario error (mobipath's, or the
    simulator extension's) as mobipath's `ScenarioError` with its field-by-field errors, anything
    else as `RunFailed` (type name and message). The same in every backend and with one worker,
    so how a run fails never depends on where it ran."""
    from . import _core
    from .errors import ConfigError, ScenarioError

    if isinstance(e, (ScenarioError, RunFailed)):
        return e
    if isinstance(e, _core.ScenarioError):
        file = getattr(e, "file", None)
        errors = [ConfigError.from_dict(d, file) for d in getattr(e, "errors", None) or []]
        return ScenarioError(errors or [ConfigError("scenario", "", str(e), file)], file)
    return RunFailed(type(e).__name__, str(e), key)


@dataclass(frozen=True)
class Backend:
    """Which executor runs the runs: ``local`` (processes on this machine) or ``ray``
    (``address`` of a running cluster; None starts a local Ray instance)."""

    name: str = "local"
    address: Optional[str] = None

    def __post_init__(self) -> None:
        if self.name not in BACKENDS:
            raise BackendError(f"--backend must be one of {', '.join(BACKENDS)} (got {self.name!r})")
        if self.address is not None and self.name != "ray":
            raise BackendError("--ray-address needs --backend ray")


LOCAL = Backend()

#: How often a run whose worker died (the OOM killer, a signal, a crash of the process) is tried
#: again before it counts as failed: the runs are deterministic, but a worker's death may be the
#: machine's doing (memory another program took). Ray's `max_retries` for the same case.
WORKER_RETRIES = 2


@dataclass(frozen=True)
class Kept:
    """A run's result that the worker kept (`keep.put`), as a resumed run would read it back:
    its JSON text, for the driver to parse; or, when the job's results are JSON-native (dicts
    with str keys, lists, str, float, bool, None: what parsing their JSON text gives back), the
    result itself in `value` (`text` None), which costs the driver less than parsing. Either way
    the driver neither serialises nor writes the result again."""

    text: Optional[str]
    value: Any = None


def execute(
    todo: Sequence[Hashable],
    job: Callable[..., Any],
    args: Callable[[Any], tuple[Any, ...]],
    done: Callable[[Any, Any], None],
    jobs: Optional[int] = None,
    backend: Optional[Backend] = None,
    *,
    keep: Any = None,
    describe: Optional[Callable[[Any], str]] = None,
    native: bool = False,
    on_death: Optional[Callable[[Any, str], Any]] = None,
) -> int:
    """Runs `job(*args(k))` for every key in `todo` on `backend` and calls `done(k, result)` here
    as each finishes. `job` must be a module-level function (it is pickled by reference) and its
    results picklable. Returns the number of workers used. On KeyboardInterrupt the workers are
    stopped at once and the interrupt propagates; every run `done` was called for is complete.
    A run's exception is raised here as `portable` makes it (a `ScenarioError`, else `RunFailed`
    with the type name and message), whichever backend ran it.

    `keep` (with `describe`): an object whose ``put(describe(k), result)`` keeps a result and
    returns its JSON text (or None: not kept), e.g. a `RunCache`. Local worker processes call it
    themselves and hand `done` a `Kept` (the text), so this process neither serialises nor writes
    their results; in this process (one worker) and on Ray (no shared file system) `done` gets
    the result and the caller keeps it. `native`: the job's results are JSON-native (see Kept).

    A run whose worker process dies (killed by the system, crashed) is run again up to
    `WORKER_RETRIES` times; then `done(k, on_death(k, why))` records it and the others go on, or
    without `on_death` the executor raises `WorkerDied` naming the run."""
    backend = backend or LOCAL
    if not todo:  # everything cached: no pool, no Ray to start or reach
        return max(1, jobs or os.cpu_count() or 1)
    if backend.name == "ray":
        return _execute_ray(todo, job, args, done, jobs, backend.address, on_death)
    return _execute_local(
        todo, job, args, done, jobs, keep if describe is not None else None, describe, native, on_death
    )


# --- local: worker processes ----------------------------------------------------------------
#
# Not multiprocessing.Pool: the pool silently replaces a worker that dies and never says which
# run it held, and its task and result threads do work in the driver for every run (which shares
# the cores with the workers). Here each worker has its own pipe and holds the run it runs and the
# next ones (so it never waits for this process): two for long runs, about 20 ms worth for
# short ones, when the driver also reads their results in batches rather than waking for each
# run. The driver knows which run a dead worker held, and does no per-run work beyond reading
# the result.

#: The work a worker holds beyond the run it runs, and the driver's pause between reads when
#: runs are shorter than PACE_BELOW_S.
HOLD_S = 0.02
PACE_S = 0.005
PACE_BELOW_S = 0.005


def _ignore_sigint() -> None:
    # Ctrl-C reaches the whole process group: the workers leave it to the main process, which
    # stops them (no traceback from each worker).
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _die_with_parent() -> None:
    """Linux: the kernel kills this worker when the driver dies (even by SIGKILL), so no orphan
    goes on running, or writing cache entries after the driver is gone."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass  # not Linux: a worker sees its pipe closed when it next reads it, and leaves


def _worker_main(
    conn: Any, job: Callable[..., Any], keep: Any, native: bool, parent: int, siblings: Sequence[int] = ()
) -> None:
    _ignore_sigint()
    _die_with_parent()
    # A forked worker inherits the driver's ends of the other workers' pipes: closed, so that each
    # worker sees end-of-file when the driver is gone instead of waiting on its siblings.
    for fd in siblings:
        with contextlib.suppress(OSError):
            os.close(fd)
    if os.getppid() != parent:  # the driver died before prctl took effect
        return
    while True:
        try:
            task = conn.recv()
        except (EOFError, OSError):
            return
        if task is None:
            return
        key, task_args, description = task
        t0 = time.perf_counter()
        try:
            result = job(*task_args)
            if keep is not None and description is not None:
                text = keep.put(description, result)
                if text is not None:
                    result = Kept(None, result) if native else Kept(text)
            msg = (True, key, result, time.perf_counter() - t0)
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as e:  # the job's own exception: raised in the driver, as a serial run would
            msg = (False, key, portable(e, key), 0.0)
        try:
            conn.send(msg)
        except (EOFError, OSError):
            return
        except Exception as e:  # an unpicklable result
            conn.send((False, key, RunFailed(type(e).__name__, f"its result cannot be sent back: {e}", key), 0.0))


class _Worker:
    conn: Any  # the parent's end of the pipe (a multiprocessing Connection)

    def __init__(
        self, ctx: Any, job: Callable[..., Any], keep: Any, native: bool, others: Sequence[_Worker] = ()
    ) -> None:
        here, there = ctx.Pipe(duplex=True)
        # With fork, the child has copies of these descriptors (other start methods inherit none).
        siblings = [w.conn.fileno() for w in others] + [here.fileno()] if ctx.get_start_method() == "fork" else []
        self.proc = ctx.Process(
            target=_worker_main, args=(there, job, keep, native, os.getpid(), siblings), daemon=True
        )
        self.proc.start()
        there.close()
        self.conn = here
        self.held: list[Any] = []  # keys sent, in order: the first is the one running

    def send(self, task: Optional[tuple[Any, ...]]) -> bool:
        """Sends a run (key, args, description), or None: leave."""
        try:
            self.conn.send(task)
            return True
        except OSError:  # the worker is gone: its death is handled when its sentinel fires
            return False

    def stop(self, timeout: float, finished: bool = False) -> None:
        if finished:  # told to leave (None): a moment to do so before it is terminated
            self.proc.join(timeout)
        if self.proc.exitcode is None:
            self.proc.terminate()
        self.proc.join(timeout)
        if self.proc.exitcode is None:
            self.proc.kill()
            self.proc.join()
        self.conn.close()


def death_reason(exitcode: Optional[int]) -> str:
    """Why a worker process ended, for a failed run's error: the signal's name when one killed it."""
    if exitcode is not None and exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        why = "; e.g. the out-of-memory killer" if -exitcode == signal.SIGKILL else ""
        return f"killed by {name}{why}"
    return f"exit code {exitcode}"


def _execute_local(
    todo: Sequence[Hashable],
    job: Callable[..., Any],
    args: Callable[[Any], tuple[Any, ...]],
    done: Callable[[Any, Any], None],
    jobs: Optional[int],
    keep: Any,
    describe: Optional[Callable[[Any], str]],
    native: bool,
    on_death: Optional[Callable[[Any, str], Any]],
) -> int:
    from collections import deque
    from multiprocessing.connection import wait

    n = max(1, jobs or os.cpu_count() or 1)
    if n == 1 or len(todo) <= 1:
        for k in todo:
            try:
                result = job(*args(k))
            except (KeyboardInterrupt, SystemExit):
                raise
            except BaseException as e:  # as a worker would send it: the same error wherever it ran
                raise portable(e, k) from None
            done(k, result)
        return n
    ctx = multiprocessing.get_context()
    queue = deque(todo)  # runs not yet given to a worker (a dead worker's runs come back first)
    deaths: dict[Any, list[str]] = {}
    left = len(todo)
    workers: list[_Worker] = []
    pace = _Pace()
    try:
        for _ in range(min(n, len(todo))):
            workers.append(_Worker(ctx, job, keep, native, workers))
        while left:
            hold = pace.hold()
            for w in workers:  # each worker holds the run it runs and the next ones
                while len(w.held) < hold and queue:
                    k = queue.popleft()
                    w.held.append(k)
                    if not w.send((k, args(k), describe(k) if keep is not None and describe is not None else None)):
                        break
            by_conn = {w.conn: w for w in workers}
            by_sentinel = {w.proc.sentinel: w for w in workers}
            ready = wait([*by_conn, *by_sentinel], timeout=0.5)  # Ctrl-C interrupts the wait
            for r in ready:
                if r in by_conn:
                    left -= _receive(by_conn[r], done, pace)
            for r in ready:
                dead = by_sentinel.get(r)
                if dead is None:
                    continue
                left -= _receive(dead, done, pace)  # what it sent before it died
                dead.proc.join()
                if dead.held:
                    k = dead.held.pop(0)  # the run it was running; the others had not started
                    queue.extendleft(reversed(dead.held))
                    why = death_reason(dead.proc.exitcode)
                    deaths.setdefault(k, []).append(why)
                    if len(deaths[k]) > WORKER_RETRIES:
                        msg = (
                            f"the worker process running this run died on each of its {len(deaths[k])} attempts "
                            f"({'; '.join(dict.fromkeys(deaths[k]))})"
                        )
                        if on_death is None:
                            raise WorkerDied(f"run {k!r}: {msg}")
                        done(k, on_death(k, msg))
                        left -= 1
                    else:
                        queue.appendleft(k)
                dead.held = []
                dead.stop(1.0)
                workers.remove(dead)
                if left:
                    workers.append(_Worker(ctx, job, keep, native, workers))
            if pace.short():
                time.sleep(PACE_S)  # let short runs' results gather: one wake-up for several
        for w in workers:
            w.send(None)
        for w in workers:
            w.stop(5.0, finished=True)
    except BaseException:
        for w in workers:
            if w.proc.exitcode is None:
                w.proc.terminate()
        raise
    finally:
        for w in workers:
            w.stop(5.0)
    return n


class _Pace:
    """The runs' mean duration so far (a moving average of what the workers report), and from it
    how many runs a worker holds and whether the driver pauses between reads."""

    def __init__(self) -> None:
        self.mean_s: Optional[float] = None

    def add(self, seconds: float) -> None:
        self.mean_s = seconds if self.mean_s is None else 0.9 * self.mean_s + 0.1 * seconds

    def hold(self) -> int:
        if self.mean_s is None:
            return 2
        return max(2, min(64, 1 + int(HOLD_S / max(self.mean_s, 1e-6))))

    def short(self) -> bool:
        return self.mean_s is not None and self.mean_s < PACE_BELOW_S


def _receive(w: _Worker, done: Callable[[Any, Any], None], pace: _Pace) -> int:
    """Hands every result waiting in `w`'s pipe to `done`; the number of runs finished."""
    got = 0
    while True:
        try:
            if not w.conn.poll():
                return got
            ok, k, payload, seconds = w.conn.recv()
        except (EOFError, OSError):  # the worker died, perhaps half way through a message
            return got
        if not ok:
            raise payload
        w.held.pop(0)  # a worker runs its runs in the order it got them
        pace.add(seconds)
        done(k, payload)
        got += 1


# --- ray: tasks on a cluster ----------------------------------------------------------------


def _import_ray() -> Any:
    try:
        import ray  # type: ignore[import-not-found]
    except ImportError:
        raise BackendError("--backend ray needs Ray, an optional dependency: pip install 'mobipath[ray]'") from None
    return ray


def _ray_task(job: Callable[..., Any], shipped: tuple[Any, ...]) -> Any:
    """A Ray task: the shipped files are written to a task-local directory, the job runs on
    them, the directory goes."""
    tmp = tempfile.mkdtemp(prefix="mobipath-task-")
    try:
        return job(*materialize(shipped, Path(tmp)))
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as e:  # Ray pickles what the task raised: a plain message (see RunFailed)
        raise portable(e) from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _execute_ray(
    todo: Sequence[Hashable],
    job: Callable[..., Any],
    args: Callable[[Any], tuple[Any, ...]],
    done: Callable[[Any, Any], None],
    jobs: Optional[int],
    address: Optional[str],
    on_death: Optional[Callable[[Any, str], Any]] = None,
) -> int:
    ray = _import_ray()
    import logging

    started = False
    if not ray.is_initialized():
        kw: dict[str, Any] = {"logging_level": logging.ERROR, "log_to_driver": False, "include_dashboard": False}
        if address is None:
            # A fresh local instance ("local": never a cluster some other program started here).
            kw.update(address="local", num_cpus=max(1, jobs or os.cpu_count() or 1))
        else:
            kw["address"] = address
        try:
            ray.init(**kw)
        except Exception as e:  # unreachable cluster, bad address: say so, not a traceback
            raise BackendError(
                f"--backend ray: cannot start or reach Ray{f' at {address}' if address else ''}: "
                f"{type(e).__name__}: {e}"
            ) from None
        started = True
    pending: dict[Any, Any] = {}
    try:
        cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
        workers = min(jobs, cpus) if jobs else cpus
        # max_retries: a task whose worker died (a node lost, the OOM killer) runs again, as the
        # runs are deterministic; an exception raised by the run itself is not retried.
        remote = ray.remote(num_cpus=1, max_retries=WORKER_RETRIES)(_ray_task)
        # What Ray raises once a task's worker (or node) has died on every attempt.
        died = tuple(
            getattr(ray.exceptions, n)
            for n in ("WorkerCrashedError", "OutOfMemoryError", "NodeDiedError", "LocalRayletDiedError")
            if hasattr(ray.exceptions, n)
        )
        job_ref = ray.put(job)
        # A bounded window of tasks in flight: a million-run grid is not submitted at once, and
        # -j caps the runs a shared cluster executes at a time.
        window = workers if jobs else 2 * workers
        queue = iter(todo)
        exhausted = False
        while pending or not exhausted:
            while not exhausted and len(pending) < window:
                k = next(queue, _END)
                if k is _END:
                    exhausted = True
                    break
                pending[remote.remote(job_ref, ship_args(args(k)))] = k
            if not pending:
                break
            ready, _ = ray.wait(list(pending), num_returns=1, timeout=0.2)  # short: Ctrl-C at once
            for ref in ready:
                k = pending.pop(ref)
                try:
                    result = ray.get(ref)
                except ray.exceptions.RayTaskError as e:
                    cause = getattr(e, "cause", None)
                    if isinstance(cause, RunFailed) and cause.key is None:
                        cause = RunFailed(cause.kind, cause.message, k)
                    raise (cause if isinstance(cause, BaseException) else portable(e, k)) from None
                except died as e:
                    first = next((line.strip() for line in str(e).splitlines() if line.strip()), "")
                    msg = (
                        f"the Ray worker running this run died on each of its {WORKER_RETRIES + 1} attempts "
                        f"({type(e).__name__}: {first[:300]})"
                    )
                    if on_death is None:
                        raise WorkerDied(f"run {k!r}: {msg}") from None
                    result = on_death(k, msg)
                done(k, result)
        return workers
    except BaseException:
        for ref in pending:
            with contextlib.suppress(Exception):
                ray.cancel(ref, force=True)
        raise
    finally:
        if started:
            ray.shutdown()


_END = object()


# --- shipping scenarios and their files with a task -----------------------------------------


#: The scenario fields that name files (relative to the scenario's folder): link capacity traces,
#: cell UEs' CQI traces and the train's handover table and GPS trace. tests/python/test_sweep.py
#: checks this list against every shipped scenario.
def referenced_files(table: dict[str, Any]) -> list[str]:
    """The file paths a parsed scenario refers to, in a fixed order."""
    refs: list[str] = []

    def add(v: Any) -> None:
        if isinstance(v, str) and v and v not in refs:
            refs.append(v)

    for link in _tables(table.get("links")):
        add(_get(link, "trace", "file"))
        add(_get(link, "reverse", "trace", "file"))
    for cell in _tables(table.get("cells")):
        for ue in _tables(cell.get("ues")):
            add(ue.get("cqi_trace"))
    hst = table.get("hst")
    if isinstance(hst, dict):
        add(hst.get("table"))
        add(_get(hst, "gps_trace", "file"))
        add(_get(hst, "gps_trace", "track"))
    return refs


def _tables(v: Any) -> list[dict[str, Any]]:
    return [x for x in v if isinstance(x, dict)] if isinstance(v, list) else []


def _get(d: dict[str, Any], *keys: str) -> Any:
    for k in keys:
        d = d.get(k) if isinstance(d, dict) else None  # type: ignore[assignment]
    return d


def _rewrite(table: dict[str, Any], names: dict[str, str]) -> None:
    """Replaces every referenced path by its task-local name (same fields as referenced_files)."""

    def sub(d: Any, *keys: str) -> None:
        *head, last = keys
        d = _get(d, *head) if head else d
        if isinstance(d, dict) and d.get(last) in names:
            d[last] = names[d[last]]

    for link in _tables(table.get("links")):
        sub(link, "trace", "file")
        sub(link, "reverse", "trace", "file")
    for cell in _tables(table.get("cells")):
        for ue in _tables(cell.get("ues")):
            sub(ue, "cqi_trace")
    if isinstance(table.get("hst"), dict):
        sub(table["hst"], "table")
        sub(table["hst"], "gps_trace", "file")
        sub(table["hst"], "gps_trace", "track")


@dataclass
class ShippedScenario:
    """A scenario file travelling with a task: its text (file references rewritten to task-local
    names) and the referenced files' bytes. Becomes a path to a task-local copy on the worker."""

    name: str
    text: str
    files: dict[str, bytes] = field(default_factory=dict)


@dataclass
class ShippedDir:
    """A scenario's base directory travelling with a task: only the files the task's scenario
    text refers to. Becomes a task-local directory on the worker."""

    files: dict[str, bytes] = field(default_factory=dict)


def _pack(text: str, base_dir: Path, file: str) -> Optional[tuple[str, dict[str, bytes]]]:
    """(rewritten text, files) for a scenario text whose references resolve against `base_dir`;
    None when it is not TOML or refers to no readable file (then it travels unchanged)."""
    from .errors import ScenarioError
    from .source import _dump_toml, parse_toml

    try:
        table = parse_toml(text, file)
    except ScenarioError:
        return None
    names: dict[str, str] = {}
    files: dict[str, bytes] = {}
    for i, rel in enumerate(referenced_files(table)):
        try:
            data = _read_bytes(base_dir / rel)
        except OSError:
            continue  # the worker reports it as a local run would: "cannot read"
        names[rel] = f"f{i}-{Path(rel).name}"
        files[names[rel]] = data
    if not files:
        return None
    _rewrite(table, names)
    return _dump_toml(table, file), files


def ship_args(args: tuple[Any, ...]) -> tuple[Any, ...]:
    """A task's arguments made self-contained for a worker without this file system:

    - a path (str or PathLike) to an existing ``.toml`` file becomes a `ShippedScenario`;
    - a path to an existing directory next to scenario text (a str argument of several lines)
      becomes a `ShippedDir` with the files that text refers to, and the text refers to them by
      their task-local names (a text referring to no file leaves both unchanged).

    Everything else travels as it is. `materialize` undoes this on the worker."""
    out = list(args)
    texts = [i for i, a in enumerate(args) if isinstance(a, str) and "\n" in a]
    for i, a in enumerate(args):
        if isinstance(a, (str, os.PathLike)) and not (isinstance(a, str) and "\n" in a):
            p = Path(os.fspath(a))
            try:
                is_file, is_dir = p.is_file(), p.is_dir()
            except OSError:
                continue
            if is_file and p.suffix == ".toml":
                text = p.read_text(encoding="utf-8")
                packed = _pack(text, p.resolve().parent, str(p))
                out[i] = ShippedScenario(p.name, *(packed or (text, {})))
            elif is_dir and len(texts) == 1:
                packed = _pack(args[texts[0]], p, "<string>")
                if packed is not None:
                    out[texts[0]], out[i] = packed[0], ShippedDir(packed[1])
    return tuple(out)


def materialize(args: Iterable[Any], tmp: Path) -> tuple[Any, ...]:
    """A shipped task's arguments on the worker: shipped files written under `tmp`, each
    shipped scenario or directory replaced by its task-local path."""
    out = []
    for i, a in enumerate(args):
        if isinstance(a, (ShippedScenario, ShippedDir)):
            d = tmp / str(i)
            d.mkdir(parents=True)
            for name, data in a.files.items():
                (d / name).write_bytes(data)
            if isinstance(a, ShippedScenario):
                (d / a.name).write_text(a.text, encoding="utf-8")
                a = str(d / a.name)
            else:
                a = str(d)
        out.append(a)
    return tuple(out)


def files_digest(text: str, base_dir: Path, file: str) -> str:
    """A digest of the files a scenario text refers to (empty when none): part of a cache key."""
    from .errors import ScenarioError
    from .source import parse_toml

    try:
        refs = referenced_files(parse_toml(text, file))
    except ScenarioError:
        return ""
    h = hashlib.sha256()
    for rel in refs:
        try:
            h.update(rel.encode() + b"\0" + hashlib.sha256((base_dir / rel).read_bytes()).digest())
        except OSError:
            h.update(rel.encode() + b"\0missing")
    return h.hexdigest() if refs else ""
