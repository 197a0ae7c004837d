"""The pass manager: verification between passes, fixed points, dumps, reports."""
import re

import pytest

from tfc.ir import VerifyError, parse_module
from tfc.passes import (CSE, DCE, PIPELINES, Canonicalize, ConstFold, FixedPoint, InlineBranches, LoopDCE, Pass,
                        PassManager, PassVerificationError, default_pipeline, folder_dump)

TEXT = """\
func @main(%x: f32[s0,4]) -> (f32[s0,4]) {
  %0 = constant dense<1.0> : f32[]
  %1 = broadcast %0 {dims=[]} : f32[s0,4]
  %2 = mul %x, %1 : f32[s0,4]
  %3 = exp %2 : f32[s0,4]
  %4 = exp %x : f32[s0,4]
  %5 = add %3, %4 : f32[s0,4]
  return %5
}
"""

SIMPLIFIED = """\
func @main(%x: f32[s0,4]) -> (f32[s0,4]) {
  %0 = exp %x : f32[s0,4]
  %1 = add %0, %0 : f32[s0,4]
  return %1
}
"""


class Counting(Pass):
    """Says it changed the module for its first ``changes`` runs (touching nothing)."""

    def __init__(self, name: str, changes: int):
        super().__init__()
        self.name = name
        self.changes = changes
        self.runs = 0

    def run(self, module):
        self.notes = [f"run {self.runs + 1}"]
        self.runs += 1
        return self.runs <= self.changes


class BreaksTypes(Pass):
    """Deliberately breaks the IR: gives the first exp a wrong result type."""

    name = "break_types"

    def run(self, module):
        for op in module.main.walk():
            if op.name == "exp":
                op.results[0].type = op.operands[0].type.with_shape([7])
                return True
        return False


class UseBeforeDef(Pass):
    """Deliberately breaks the IR by moving the return to the front... and says nothing changed."""

    name = "sneaky"

    def run(self, module):
        ops = module.main.body.ops
        ops.insert(0, ops.pop())
        return False


# -- running pipelines -----------------------------------------------------------------------
def test_simplify_pipeline_by_name():
    module = parse_module(TEXT)
    report = PassManager("simplify").run(module)
    assert str(module) == SIMPLIFIED
    assert report.iterations == {"simplify": 2}
    assert report.converged == {"simplify": True}
    assert report.changed


def test_pipelines_table():
    assert {"none", "simplify", "default"} <= set(PIPELINES)
    assert PIPELINES["none"]() == []
    (group,) = PIPELINES["simplify"]()
    assert isinstance(group, FixedPoint) and group.name == "simplify" and group.max_iterations == 8
    assert [type(p) for p in group.passes] == [Canonicalize, ConstFold, InlineBranches, CSE, DCE, LoopDCE]
    assert [item.name for item in default_pipeline()] == ["simplify"]


def test_none_pipeline_still_verifies_the_input():
    module = parse_module(TEXT)
    report = PassManager("none").run(module)
    assert len(report) == 0 and str(module) == TEXT
    UseBeforeDef().run(module)
    with pytest.raises(PassVerificationError, match="the input module does not verify"):
        PassManager([]).run(module)


def test_unknown_pipeline_name():
    with pytest.raises(KeyError, match="unknown pipeline 'fast'"):
        PassManager("fast")


def test_pipeline_items_are_checked():
    with pytest.raises(TypeError):
        PassManager([DCE, CSE()])
    with pytest.raises(TypeError):
        FixedPoint("nested", [FixedPoint("inner", [DCE()])])


# -- verification ----------------------------------------------------------------------------
def test_a_pass_that_breaks_the_ir_is_named():
    module = parse_module(TEXT)
    with pytest.raises(PassVerificationError) as info:
        PassManager([DCE(), BreaksTypes(), CSE()]).run(module)
    error = info.value
    assert error.pass_name == "break_types" and error.stage == "break_types"
    assert isinstance(error, VerifyError) and isinstance(error.error, VerifyError)
    message = str(error)
    assert message.startswith("pass 'break_types' (stage break_types) produced invalid IR:\n@main: 'exp'")
    assert "do not match the inferred" in message


def test_a_breaking_pass_inside_a_fixed_point_names_its_stage():
    module = parse_module(TEXT)
    with pytest.raises(PassVerificationError, match=r"pass 'break_types' \(stage break_types\.2\)"):
        PassManager([FixedPoint("g", [Counting("c", 5), _Delayed(BreaksTypes(), 2)])]).run(module)


class _Delayed(Pass):
    """Runs ``inner`` only from its ``start``-th run on."""

    def __init__(self, inner: Pass, start: int):
        super().__init__()
        self.inner, self.start, self.runs = inner, start, 0
        self.name = inner.name

    def run(self, module):
        self.runs += 1
        return self.inner.run(module) if self.runs >= self.start else False


def test_verification_can_be_turned_off():
    module = parse_module(TEXT)
    PassManager([BreaksTypes()], verify=False).run(module)


def test_unchanged_passes_are_not_verified_after():
    module = parse_module(TEXT)
    PassManager([UseBeforeDef()]).run(module)  # claims no change: not verified after it


def test_exceptions_in_a_pass_name_it():
    class Crashes(Pass):
        name = "crashes"

        def run(self, module):
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom") as info:
        PassManager([Crashes()]).run(parse_module(TEXT))
    assert any("pass 'crashes'" in note for note in info.value.__notes__)


# -- fixed points ----------------------------------------------------------------------------
def test_fixed_point_stops_when_nothing_changes():
    a, b = Counting("a", 2), Counting("b", 1)
    group = FixedPoint("g", [a, b])
    report = PassManager([group]).run(parse_module(TEXT))
    assert [r.stage for r in report] == ["a.1", "b.1", "a.2", "b.2", "a.3", "b.3"]
    assert [r.changed for r in report] == [True, True, True, False, False, False]
    assert group.iterations == 3 and group.converged
    assert report.iterations == {"g": 3} and report.converged == {"g": True}
    assert [(r.group, r.iteration) for r in report][:2] == [("g", 1), ("g", 1)]


def test_fixed_point_respects_the_cap():
    always = Counting("always", 1000)
    group = FixedPoint("g", [always], max_iterations=3)
    report = PassManager([group, Counting("after", 0)]).run(parse_module(TEXT))
    assert always.runs == 3
    assert [r.stage for r in report] == ["always.1", "always.2", "always.3", "after"]
    assert group.iterations == 3 and not group.converged
    assert report.converged == {"g": False}


def test_fixed_point_default_cap_is_8():
    always = Counting("always", 1000)
    PassManager([FixedPoint("g", [always])]).run(parse_module(TEXT))
    assert always.runs == 8


def test_fixed_point_needs_an_iteration():
    with pytest.raises(ValueError):
        FixedPoint("g", [DCE()], max_iterations=0)


# -- dumps and reports -----------------------------------------------------------------------
def test_dump_hook_receives_stage_names_in_order():
    stages, texts = [], []

    def dump(stage, module):
        stages.append(stage)
        texts.append(str(module))

    PassManager([DCE(), FixedPoint("simplify", [Canonicalize(), CSE()]), Counting("last", 0)],
                dump=dump).run(parse_module(TEXT))
    assert stages == ["dce", "canonicalize.1", "cse.1", "canonicalize.2", "cse.2", "last"]
    assert "mul" in texts[0] and "mul" not in texts[1]


def test_folder_dump_writes_numbered_files(tmp_path):
    PassManager("simplify", dump=folder_dump(str(tmp_path / "dumps"))).run(parse_module(TEXT))
    names = sorted(p.name for p in (tmp_path / "dumps").iterdir())
    assert names[:5] == ["0001.canonicalize.1.tfcir", "0002.const_fold.1.tfcir", "0003.inline_branches.1.tfcir",
                         "0004.cse.1.tfcir", "0005.dce.1.tfcir"]
    assert (tmp_path / "dumps" / names[-1]).read_text() == SIMPLIFIED


def test_records_count_ops_and_time():
    module = parse_module(TEXT)
    report = PassManager([Canonicalize(), DCE(), CSE()]).run(module)
    assert [(r.name, r.ops_before, r.ops_after, r.changed) for r in report] == [
        ("canonicalize", 6, 5, True), ("dce", 5, 3, True), ("cse", 3, 2, True)]
    assert all(r.seconds >= 0 for r in report)
    assert report.total_seconds >= sum(r.seconds for r in report)


def test_notes_are_collected_per_execution():
    group = FixedPoint("g", [Counting("a", 1)])
    report = PassManager([group]).run(parse_module(TEXT))
    assert [r.notes for r in report] == [["run 1"], ["run 2"]]
    assert report.notes() == ["a.1: run 1", "a.2: run 2"]


def test_table_text_shape():
    report = PassManager("simplify").run(parse_module(TEXT))
    lines = report.table().splitlines()
    assert re.fullmatch(r"pass +time ms +ops +changed", lines[0])
    assert set(lines[1].replace(" ", "")) == {"-"}
    assert len(lines) == 2 + len(report) + 2
    row = re.compile(r"(\S+) +(\d+\.\d{3}) +(\d+ -> \d+) +(yes|no)")
    stages = [row.fullmatch(line).group(1) for line in lines[2:-2]]
    assert stages == [r.stage for r in report]
    assert row.fullmatch(lines[-1]).group(1, 3, 4) == ("total", "6 -> 2", "yes")
    # columns are aligned: every row has the same width up to its last column
    starts = {len(row.fullmatch(line).group(0)) - len(row.fullmatch(line).group(4))
              for line in lines[2:-2] + lines[-1:]}
    assert len(starts) == 1


def test_summary_has_one_line_per_pass_with_op_counts():
    report = PassManager([Canonicalize(), DCE()]).run(parse_module(TEXT))
    assert report.summary() == "canonicalize: 6 -> 5 ops (changed)\ndce: 5 -> 3 ops (changed)\n"


def test_passes_reset_their_notes():
    module = parse_module("""\
func @main() -> (f32[10]) {
  %0 = constant dense<1.0> : f32[]
  %1 = broadcast %0 {dims=[]} : f32[10]
  return %1
}
""")
    folder = ConstFold(max_elements=4)
    report = PassManager([folder, folder]).run(module)
    assert [len(r.notes) for r in report] == [1, 1]
    assert folder.notes == report.records[1].notes


def test_pass_base_class():
    with pytest.raises(NotImplementedError):
        Pass().run(parse_module(TEXT))
