"""tf.flags / tf.app.flags and tf.app.run: TF 1.15's absl-style flag parsing (values and
error messages as absl.flags gives them) and the run() entry point."""
from __future__ import annotations

import sys

import pytest

import tfc.compat.v1 as tf
from tfc.frontend import flags as flags_module


@pytest.fixture
def fv():
    values = tf.flags.FlagValues()
    tf.flags.DEFINE_string("job_name", "", "job", flag_values=values)
    tf.flags.DEFINE_integer("task_index", 0, "idx", flag_values=values)
    tf.flags.DEFINE_float("lr", 0.1, "lr", flag_values=values)
    tf.flags.DEFINE_boolean("sync", False, "sync", flag_values=values)
    tf.flags.DEFINE_list("hosts", "a,b", "hosts", flag_values=values)
    return values


def test_namespaces():
    assert tf.app.flags.FLAGS is tf.flags.FLAGS
    assert tf.flags.DEFINE_bool is tf.flags.DEFINE_boolean
    assert callable(tf.app.run)


def test_parsing_forms(fv):
    rest = fv(["p", "--job_name=ps", "--task_index", "3", "--lr=0.5", "--sync", "--hosts=x,y", "rest"])
    assert rest == ["p", "rest"]
    assert (fv.job_name, fv.task_index, fv.lr, fv.sync, fv.hosts) == ("ps", 3, 0.5, True, ["x", "y"])
    fv.unparse_flags()
    assert fv(["p", "--nosync", "-task_index=2", "--", "--lr=3"]) == ["p", "--lr=3"]
    assert (fv.job_name, fv.task_index, fv.lr, fv.sync, fv.hosts) == ("", 2, 0.1, False, ["a", "b"])
    fv.unparse_flags()
    assert fv(["p", "--sync=false"]) == ["p"] and fv.sync is False
    fv.unparse_flags()
    assert fv(["p", "--sync=T"]) == ["p"] and fv.sync is True


def test_known_only_keeps_unknown_flags_and_the_separator(fv):
    assert fv(["p", "--bogus=1", "--lr=2", "--", "x"], known_only=True) == ["p", "--bogus=1", "--", "x"]
    assert fv.lr == 2.0


@pytest.mark.parametrize("argv, error, message", [
    (["p", "--bogus=1"], "UnrecognizedFlagError", "Unknown command line flag 'bogus'"),
    (["p", "--job_nme=x"], "UnrecognizedFlagError", "Unknown command line flag 'job_nme'. Did you mean: job_name ?"),
    (["p", "--task_index=abc"], "IllegalFlagValueError",
     "flag --task_index=abc: invalid literal for int() with base 10: 'abc'"),
    (["p", "--lr=x"], "IllegalFlagValueError", "flag --lr=x: could not convert string to float: 'x'"),
    (["p", "--sync=maybe"], "IllegalFlagValueError",
     "flag --sync=maybe: ('Non-boolean argument to boolean flag', 'maybe')"),
    (["p", "--task_index"], "Error", "Missing value for flag --task_index"),
])
def test_errors_are_absls(fv, argv, error, message):
    with pytest.raises(getattr(tf.flags, error)) as info:
        fv(argv)
    assert str(info.value) == message
    assert type(info.value).__name__ == error


def test_access_before_parse_duplicates_and_assignment(fv):
    with pytest.raises(tf.flags.UnparsedFlagAccessError,
                       match="Trying to access flag --job_name before flags were parsed."):
        fv.job_name
    with pytest.raises(tf.flags.DuplicateFlagError, match="The flag 'job_name' is defined twice. First from "):
        tf.flags.DEFINE_string("job_name", "", "again", flag_values=fv)
    fv(["p"])
    with pytest.raises(AttributeError, match="nope"):
        fv.nope
    fv.job_name = "worker"
    assert fv.job_name == "worker" and fv["job_name"].value == "worker" and "job_name" in fv
    assert fv.flag_values_dict()["task_index"] == 0
    with pytest.raises(tf.flags.IllegalFlagValueError, match="flag --k=x: invalid literal for int"):
        tf.flags.DEFINE_integer("k", "x", "h", flag_values=fv)


def test_global_flags_parse_sys_argv_on_first_access(monkeypatch):
    fresh = tf.flags.FlagValues(parse_on_access=True)
    monkeypatch.setattr(flags_module, "FLAGS", fresh)
    flags_module.DEFINE_string("job_name", "", "job")
    flags_module.DEFINE_integer("task_index", 0, "idx")
    monkeypatch.setattr(sys, "argv", ["prog", "--job_name=ps", "--task_index=1"])
    assert fresh.job_name == "ps" and fresh.task_index == 1
    unknown = tf.flags.FlagValues(parse_on_access=True)
    tf.flags.DEFINE_string("a", "", "a", flag_values=unknown)
    monkeypatch.setattr(sys, "argv", ["prog", "--b=1"])
    with pytest.raises(tf.flags.UnrecognizedFlagError, match="Unknown command line flag 'b'"):
        unknown.a


def test_app_run_parses_flags_calls_main_and_exits(monkeypatch):
    fresh = tf.flags.FlagValues(parse_on_access=True)
    monkeypatch.setattr(flags_module, "FLAGS", fresh)
    flags_module.DEFINE_string("job_name", "", "job")
    seen = []

    def main(argv):
        seen.append((argv, fresh.job_name))
        return 3

    with pytest.raises(SystemExit) as info:
        tf.app.run(main=main, argv=["prog", "--job_name=worker", "--unknown=1", "pos"])
    assert info.value.code == 3
    assert seen == [(["prog", "--unknown=1", "pos"], "worker")]
    fresh.unparse_flags()
    monkeypatch.setattr(sys, "argv", ["prog", "--job_name", "ps"])
    with pytest.raises(SystemExit) as info:
        tf.app.run(main=lambda argv: seen.append(fresh.job_name))
    assert info.value.code is None and seen[-1] == "ps"
    fresh.unparse_flags()
    with pytest.raises(tf.flags.Error, match="^Missing value for flag --job_name$"):
        tf.app.run(main=main, argv=["prog", "--job_name"])
    assert len(seen) == 2
