"""A run's error crosses the process boundary as plain text (mobipath.executor.portable): the
simulator extension's own exceptions, and exceptions holding what cannot be pickled, reach the
driver as the error they were, the same with one worker, several, or in a Ray task."""

import pickle
import threading

import pytest
from mobipath.errors import ScenarioError
from mobipath.executor import RunFailed, _ray_task, execute, portable

BAD = 'name = "x"\nduration_s = 1\n[[links]]\nname = "l"\nrate_mbps = 1e-9\ndelay_ms = 1\n'


def simulate_bad(key):
    """A job the simulator refuses: raises the extension's own _core.ScenarioError."""
    from mobipath import _core

    return _core.run(BAD, "bad.toml", ".", 1, None)


class Holding(Exception):
    """An exception holding a lock: it cannot be pickled."""

    def __init__(self, msg):
        super().__init__(msg)
        self.lock = threading.Lock()


def raise_unpicklable(key):
    if key == "b":
        raise Holding(f"run {key} failed here")
    return key


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_simulator_error_in_a_worker_arrives_with_its_fields(jobs):
    with pytest.raises(ScenarioError) as info:
        execute(["a", "b"], simulate_bad, lambda k: (k,), lambda k, r: None, jobs)
    fields = [e.field for e in info.value.errors]
    assert "links[0].rate_mbps" in fields, fields
    assert "PicklingError" not in str(info.value)


@pytest.mark.parametrize("jobs", [1, 2])
def test_an_unpicklable_exception_arrives_as_its_type_and_message(jobs):
    done = {}
    with pytest.raises(RunFailed) as info:
        execute(["a", "b", "c"], raise_unpicklable, lambda k: (k,), done.__setitem__, jobs)
    e = info.value
    assert (e.kind, e.message, e.key) == ("Holding", "run b failed here", "b")
    assert str(e) == "run 'b': Holding: run b failed here"
    assert pickle.loads(pickle.dumps(e)).message == e.message


def test_a_ray_task_raises_a_portable_error():
    # What a Ray task raises is pickled by Ray: the task itself makes it plain first.
    with pytest.raises(ScenarioError) as info:
        _ray_task(simulate_bad, ("k",))
    assert pickle.loads(pickle.dumps(info.value)).errors == info.value.errors
    with pytest.raises(RunFailed) as info:
        _ray_task(raise_unpicklable, ("b",))
    assert pickle.loads(pickle.dumps(info.value)).kind == "Holding"


def test_portable_keeps_what_already_crosses():
    from mobipath.errors import ConfigError

    e = ScenarioError([ConfigError("f", "1", "bad", "x.toml")], "x.toml")
    assert portable(e) is e
    r = portable(KeyError("k"), key=(1, 2))
    assert isinstance(r, RunFailed) and str(r) == "run (1, 2): KeyError: 'k'"
