"""When the IR is verified: after every pass ("each"), once after the pipeline ("end", the
compiler's default), or never; TFC_VERIFY_EACH and ``tfc dump-ir --verify-each``."""
import os

import pytest

import tfc.ir.verifier as verifier_module
from tfc.compiler import compile_module
from tfc.ir import parse_module
from tfc.passes import CSE, DCE, Pass, PassManager, PassVerificationError
from tfc.passes.manager import VERIFY_EACH_ENV, default_verify

TEXT = """\
func @main(%x: f32[s0,4]) -> (f32[s0,4]) {
  %0 = exp %x : f32[s0,4]
  %1 = exp %x : f32[s0,4]
  %2 = add %0, %1 : f32[s0,4]
  return %2
}
"""


class BreaksTypes(Pass):
    name = "break_types"

    def run(self, module):
        op = module.main.body.ops[0]
        op.results[0].type = op.operands[0].type.with_shape([7])
        return True


@pytest.fixture
def count_verifications(monkeypatch):
    """How many times the pass manager verifies a module."""
    calls = []
    real = verifier_module.verify
    monkeypatch.setattr("tfc.passes.manager.verify", lambda module: (calls.append(1), real(module))[1])
    return calls


def test_each_verifies_the_input_and_after_every_changing_pass(count_verifications):
    PassManager([CSE(), DCE(), CSE()], verify="each").run(parse_module(TEXT))
    assert len(count_verifications) == 1 + 1  # the input, then after the first CSE (the others change nothing)


def test_end_verifies_once_after_the_last_pass(count_verifications):
    PassManager([CSE(), DCE(), CSE()], verify="end").run(parse_module(TEXT))
    assert len(count_verifications) == 1


def test_none_never_verifies(count_verifications):
    PassManager([BreaksTypes(), CSE()], verify="none").run(parse_module(TEXT))
    PassManager([BreaksTypes()], verify=False).run(parse_module(TEXT))
    assert count_verifications == []


def test_end_reports_a_broken_pipeline_and_how_to_find_the_pass():
    with pytest.raises(PassVerificationError) as info:
        PassManager([BreaksTypes(), CSE()], verify="end").run(parse_module(TEXT))
    assert info.value.pass_name is None and info.value.stage == "end"
    assert str(info.value).startswith("the module does not verify after the pass pipeline")
    assert "TFC_VERIFY_EACH=1" in str(info.value) and "--verify-each" in str(info.value)
    with pytest.raises(PassVerificationError, match=r"pass 'break_types' \(stage break_types\)"):
        PassManager([BreaksTypes(), CSE()], verify="each").run(parse_module(TEXT))


def test_bad_verify_mode():
    with pytest.raises(ValueError, match="verify must be"):
        PassManager([], verify="sometimes")


def test_the_environment_picks_the_compilers_mode(monkeypatch):
    monkeypatch.delenv(VERIFY_EACH_ENV, raising=False)
    assert default_verify() == "end"
    for value in ("1", "true", "YES", " on "):
        monkeypatch.setenv(VERIFY_EACH_ENV, value)
        assert default_verify() == "each"
    monkeypatch.setenv(VERIFY_EACH_ENV, "0")
    assert default_verify() == "end"


def test_compile_module_verifies_once_by_default(monkeypatch, count_verifications):
    monkeypatch.delenv(VERIFY_EACH_ENV, raising=False)
    compile_module(parse_module(TEXT), native=False)
    assert len(count_verifications) == 1
    count_verifications.clear()
    compile_module(parse_module(TEXT), native=False, verify="each")
    assert len(count_verifications) > 2


def test_dump_ir_verify_each_flag(monkeypatch, tmp_path, capsys, count_verifications):
    from tfc.cli import main

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    mlp = os.path.join(root, "examples", "mlp.py")
    monkeypatch.delenv(VERIFY_EACH_ENV, raising=False)
    assert main(["dump-ir", mlp, "--fetch", "probabilities"]) == 0
    once = len(count_verifications)
    count_verifications.clear()
    assert main(["dump-ir", mlp, "--fetch", "probabilities", "--verify-each"]) == 0
    assert once == 1 and len(count_verifications) > 2
    assert "// ----- pass timings -----" in capsys.readouterr().out
