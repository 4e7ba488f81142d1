"""`ConfigError` and `ScenarioSource` are plain immutable records (not dataclasses, for start-up:
issue 19): compared and hashed by their fields, picklable, immutable, with a readable repr."""

import pickle
from pathlib import Path

import pytest
from mobipath.errors import ConfigError, ScenarioError
from mobipath.source import ScenarioSource


def test_config_error_is_an_immutable_value():
    a = ConfigError("links[0].rate_mbps", "-1", "must be > 0", "x.toml")
    b = ConfigError("links[0].rate_mbps", "-1", "must be > 0", "x.toml")
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1
    assert a != ConfigError("links[0].rate_mbps", "-1", "must be > 0") and a != ("links[0].rate_mbps",)
    assert pickle.loads(pickle.dumps(a)) == a
    assert repr(a) == "ConfigError(field='links[0].rate_mbps', value='-1', message='must be > 0', file='x.toml')"
    assert str(a) == "links[0].rate_mbps = -1: must be > 0" and a.with_file() == "x.toml: " + str(a)
    with pytest.raises(AttributeError):
        a.field = "y"
    with pytest.raises(AttributeError):
        del a.message
    e = pickle.loads(pickle.dumps(ScenarioError([a], "x.toml")))
    assert e.errors == [a] and e.file == "x.toml"


def test_scenario_source_is_an_immutable_value():
    a = ScenarioSource("seed = 1\n", "s.toml", Path("/tmp"), Path("/tmp/s.toml"))
    b = ScenarioSource("seed = 1\n", "s.toml", Path("/tmp"), Path("/tmp/s.toml"))
    assert a == b and hash(a) == hash(b) and pickle.loads(pickle.dumps(a)) == a
    assert a != ScenarioSource("seed = 2\n", "s.toml", Path("/tmp"), Path("/tmp/s.toml"))
    assert a.stem == "s" and ScenarioSource("x", "<string>", Path("/tmp")).stem == "scenario"
    assert repr(a).startswith("ScenarioSource(text='seed = 1\\n', file='s.toml'")
    with pytest.raises(AttributeError):
        a.text = "y"
    with pytest.raises(AttributeError):
        del a.path


@pytest.mark.parametrize(
    "text",
    [
        "",
        ".",
        "./",
        "/",
        "//",
        "///",
        "a",
        "a/",
        "a//b",
        "./a/./b/",
        "//a/b",
        "///a",
        "a/../b",
        "results/x-seed1",
        "s.toml",
        "/tmp/s.toml",
        "a.tar.gz",
        ".bashrc",
        "a.",
        "dir.d/",
        "x/.hidden",
        "sp ace/ü.toml",
    ],
)
def test_path_text_and_stem_are_pathlibs(text):
    """`mobipath run` keeps paths as strings (pathlib costs ~4 ms of every run): the strings it
    prints and records must be the ones pathlib gave."""
    from pathlib import PurePosixPath

    from mobipath.source import path_stem, path_text

    assert path_text(text) == str(PurePosixPath(text))
    assert path_stem(path_text(text)) == PurePosixPath(text).stem


def test_source_keeps_paths_as_text_and_gives_paths():
    a = ScenarioSource("seed = 1\n", "s.toml", "/tmp/", "/tmp//s.toml")
    assert a.base_dir == Path("/tmp") and a.path == Path("/tmp/s.toml") and a.path_text == "/tmp/s.toml"
    assert a == ScenarioSource("seed = 1\n", "s.toml", Path("/tmp"), Path("/tmp/s.toml"))
    assert ScenarioSource("x", "<string>", "/tmp").path is None
    assert pickle.loads(pickle.dumps(a)) == a
