"""The ``tfc`` command: dump-ir, aot, demo, bench."""
from __future__ import annotations

import argparse
import difflib
import os
import re
import runpy
import sys
import time
import traceback
from typing import Optional


class _Parser(argparse.ArgumentParser):
    """argparse, with a usage mistake reported on one line."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _load_graph(path: str, command: str = "dump-ir"):
    """Build the graph a Python file (module level) or a GraphDef file (.pb) describes."""
    from tfc import _api
    from tfc.frontend.graph import Graph

    if not os.path.isfile(path):
        raise SystemExit(f"tfc {command}: {path}: {'not a file' if os.path.exists(path) else 'no such file'}")
    _api.build()  # registers every op type a GraphDef may use
    graph = Graph()
    with graph.as_default():
        if path.endswith((".pb", ".pbtxt")):
            from tfc.frontend.graph_io import load_graph_def

            load_graph_def(path, name="")
            for op in graph.get_operations():
                op._user_frames = ()  # made by the GraphDef's author, not at a line of this command
        else:
            _run_graph_script(path, command)
    return graph


def _run_graph_script(path: str, command: str) -> None:
    """Run a Python file that builds a graph; its failure is one line naming where it failed."""
    try:
        runpy.run_path(path, run_name="__tfc_dump_ir__")
    except SystemExit as e:
        if e.code not in (None, 0):
            raise SystemExit(f"tfc {command}: {path} exited with status {e.code} while building the graph") from None
    except Exception as e:  # noqa: BLE001 - the user's script: any error is reported, not a tfc traceback
        script = os.path.abspath(path)
        frames = [f for f in traceback.extract_tb(e.__traceback__) if os.path.abspath(f.filename) == script]
        where = f"{path}:{frames[-1].lineno}" if frames else path
        raise SystemExit(f"tfc {command}: {where}: {type(e).__name__}: {_one_line(e)}") from None


def _one_line(error: BaseException) -> str:
    from tfc.frontend.errors import OpError

    text = error.message if isinstance(error, OpError) else str(error)
    if isinstance(error, KeyError) and len(error.args) == 1 and isinstance(error.args[0], str):
        text = error.args[0]
    return "; ".join(line.strip() for line in text.splitlines() if line.strip())


def _resolve_fetches(graph, names, command: str) -> list:
    out = []
    for name in names:
        try:
            out.append(graph.as_graph_element(name if ":" in name or _is_op_only(graph, name) else f"{name}:0"))
        except (KeyError, ValueError, TypeError) as e:
            raise SystemExit(f"tfc {command}: --fetch {name}: {_one_line(e)}") from None
    return out


_FEED_RE = re.compile(r"^(?P<name>[^:]+(?::\d+)?):(?P<elem>[a-z0-9]+)\[(?P<dims>[^\]]*)\]$")
_ELEM_TO_DTYPE = {"f16": "float16", "f32": "float32", "f64": "float64", "i8": "int8", "i16": "int16",
                  "i32": "int32", "i64": "int64", "u8": "uint8", "pred": "bool"}


def _parse_feed(text: str, graph, command: str = "dump-ir"):
    """``NAME:f32[?,3]`` -> (tensor, dtype, shape with -1 for unknown dims).

    The dtype must be the tensor's and the shape must fit its static shape."""
    from tfc.frontend import dtypes
    from tfc.frontend.tensor_shape import TensorShape

    match = _FEED_RE.match(text)
    dims = [d.strip() for d in match.group("dims").split(",")] if match else []
    if dims == [""]:
        dims = []
    if not match or match.group("elem") not in _ELEM_TO_DTYPE or \
            not all(d == "?" or d.isdigit() for d in dims):
        raise SystemExit(f"tfc {command}: bad --feed {text!r}; expected NAME:TYPE[DIMS] like input:f32[?,784] "
                         f"(TYPE one of {', '.join(_ELEM_TO_DTYPE)}; a dim is a number or ?)")
    name = match.group("name")
    try:
        tensor = graph.get_tensor_by_name(name if ":" in name else f"{name}:0")
    except (KeyError, ValueError) as e:
        raise SystemExit(f"tfc {command}: --feed {text}: {_one_line(e)}") from None
    dtype = dtypes.as_dtype(_ELEM_TO_DTYPE[match.group("elem")])
    if tensor.dtype.base_dtype != dtype:
        raise SystemExit(f"tfc {command}: --feed {text}: {tensor.name} is {tensor.dtype.base_dtype.name}, not "
                         f"{dtype.name}")
    shape = tuple(-1 if d == "?" else int(d) for d in dims)
    if not tensor.shape.is_compatible_with(TensorShape([None if d == -1 else d for d in shape])):
        raise SystemExit(f"tfc {command}: --feed {text} does not fit {tensor.name}, whose shape is "
                         f"{_shape_text(tensor.shape)}")
    return tensor, dtype, shape


def _shape_text(shape) -> str:
    if shape.ndims is None:
        return "unknown"
    return "[" + ",".join("?" if d is None else str(d) for d in shape.as_list()) + "]"


def _compile_for_dump(graph, fetch_names, feed_texts, native: bool = False, target: str = "cpu",
                      arch: Optional[str] = None):
    from tfc.compiler import compile_module
    from tfc.passes.lower import FeedSpec, lower_graph, prune

    fetches = _resolve_fetches(graph, fetch_names, "dump-ir")
    tensors = [f for f in fetches if hasattr(f, "value_index")]
    ops = [f for f in fetches if not hasattr(f, "value_index")]
    specs = {}
    for text in feed_texts:
        tensor, dtype, shape = _parse_feed(text, graph)
        specs[tensor] = FeedSpec(tensor, dtype, shape)
    for op in prune(tensors, ops, list(specs)):
        if op.type == "Placeholder" and op.outputs[0] not in specs:
            t = op.outputs[0]
            if t.shape.ndims is None:
                raise SystemExit(f"tfc dump-ir: placeholder {op.name} has unknown rank; give it with --feed "
                                 f"{op.name}:f32[?,...]")
            specs[t] = FeedSpec(t, t.dtype.base_dtype, tuple(-1 if d is None else d for d in t.shape.as_list()))
    started = time.perf_counter()
    lowered = lower_graph(tensors, ops, list(specs.values()))
    lowering_seconds = time.perf_counter() - started
    stages = [("lower", str(lowered.module), lowered.module.op_count())]
    result = compile_module(lowered.module, native=native, constraints=lowered.constraints, target=target, arch=arch,
                            dump=lambda name, module: stages.append((name, str(module), module.op_count())))
    result.timings = {"lowering": lowering_seconds, **result.timings}
    return result, stages


def _is_op_only(graph, name: str) -> bool:
    op = graph._nodes_by_name.get(name)
    return op is not None and not op.outputs


def dump_ir(args) -> int:
    if args.verify_each:
        os.environ["TFC_VERIFY_EACH"] = "1"  # the compiler verifies after every pass, naming a breaking one
    try:
        pattern = re.compile(args.passes) if args.passes else None
    except re.error as e:
        raise SystemExit(f"tfc dump-ir: bad --passes regex {args.passes!r}: {e}") from None
    graph = _load_graph(args.input)
    if args.emit == "ptx" and args.target != "cuda":
        raise SystemExit("tfc dump-ir: --emit ptx needs --target cuda")
    native = args.timings or args.emit != "ir"
    result, stages = _compile_for_dump(graph, args.fetch, args.feed or [], native=native, target=args.target,
                                       arch=args.arch)
    if args.emit != "ir":
        return _dump_kernels(result, args.emit)
    selected = [stages[0]]
    if args.after_all or args.passes:
        selected += [s for s in stages[1:] if pattern is None or pattern.search(s[0])]
    if stages[-1] not in selected:
        selected.append(stages[-1])
    out = sys.stdout
    previous = None
    for name, text, count in selected:
        if args.diff and previous is not None:
            diff = list(difflib.unified_diff(previous[1].splitlines(), text.splitlines(), f"after {previous[0]}",
                                             f"after {name}", lineterm=""))
            out.write(f"// ----- diff {previous[0]} -> {name} ({previous[2]} -> {count} ops) -----\n")
            out.write(("\n".join(diff) if diff else "// (no change)") + "\n")
        else:
            out.write(f"// ----- IR after {name} ({count} ops) -----\n{text}\n")
        previous = (name, text, count)
    if args.fusion_report:
        out.write("// ----- fusion report -----\n" + result.fusion_report() + "\n")
    if args.timings:
        out.write("// ----- compile timings (dump hooks included) -----\n" + result.timing_table() + "\n")
    else:
        out.write("// ----- pass timings -----\n" + result.report.table() + "\n")
    if args.dump_to:
        _write_dumps(args.dump_to, stages)
        out.write(f"// wrote {len(stages)} stages to {args.dump_to}\n")
    return 0


def _dump_kernels(result, emit: str) -> int:
    """``--emit llvm``: the program's LLVM module (for the GPU: its kernels and their CUDA
    entries, before NVPTX); ``--emit ptx``: the PTX module."""
    if emit == "ptx":
        sys.stdout.write(result.ptx)
    elif result.target == "cuda":
        sys.stdout.write(result.program.module_text("ptx"))
    else:
        sys.stdout.write(result.llvm_ir)
    return 0


def _write_dumps(directory: str, stages) -> None:
    os.makedirs(directory, exist_ok=True)
    index_lines = []
    for number, (name, text, count) in enumerate(stages):
        filename = f"{number:04d}.{name}.tfcir"
        with open(os.path.join(directory, filename), "w") as f:
            f.write(text)
        index_lines.append(f"{filename}\t{name}\t{count} ops")
    with open(os.path.join(directory, "index.txt"), "w") as f:
        f.write("\n".join(index_lines) + "\n")


def aot(args) -> int:
    """Compile fetches of a graph file into an ahead-of-time artifact folder."""
    import tfc
    from tfc.codegen.aot import AOTError
    from tfc.passes.lower import prune

    saved_model = None
    if os.path.isdir(args.input):
        saved_model = _load_saved_model(args)
        graph, session, signature_feeds, signature_fetches = saved_model
        fetches = _resolve_fetches(graph, args.fetch, "aot") if args.fetch else signature_fetches
    else:
        if not args.fetch:
            raise SystemExit(f"tfc aot: {args.input}: give the tensors to compute with --fetch (a SavedModel "
                             "directory names them in its signature)")
        graph = _load_graph(args.input, "aot")
        fetches = _resolve_fetches(graph, args.fetch, "aot")
    feeds = []
    for text in args.feed or []:
        tensor, _, shape = _parse_feed(text, graph, "aot")
        tensor.set_shape([None if d == -1 else d for d in shape])
        feeds.append(tensor)
    if saved_model is not None:
        feeds += [t for t in signature_feeds if t not in feeds]
    tensors = [f for f in fetches if hasattr(f, "value_index")]
    ops = [f for f in fetches if not hasattr(f, "value_index")]
    needed = prune(tensors, ops, feeds)
    for op in needed:
        if op.type in ("Placeholder", "PlaceholderV2") and op.outputs[0] not in feeds:
            if op.outputs[0].shape.ndims is None:
                raise SystemExit(f"tfc aot: placeholder {op.name} has unknown rank; give it with --feed "
                                 f"{op.name}:f32[?,...]")
            feeds.append(op.outputs[0])
    variables = [op for op in needed if op.type in ("VariableV2", "Variable", "VarHandleOp")]
    if saved_model is None:
        session = _variables_session(graph, variables, args) if variables else None
    try:
        compiled = tfc.compile(fetches[0] if len(fetches) == 1 else fetches, feeds=feeds, graph=graph,
                               session=session, freeze_variables=True, native=False)
        manifest = compiled.save(args.output, name=args.name, target_cpu=args.target_cpu,
                                 target_features=args.target_features, target=args.target, arch=args.arch)
    except AOTError as e:
        raise SystemExit(f"tfc aot: {e}") from None
    finally:
        if session is not None:
            session.close()
    out = sys.stdout
    target = manifest["target"]
    where = f"CUDA {target['arch']}" if target.get("kind") == "cuda" else f"{target['triple']} (CPU {target['cpu']})"
    out.write(f"wrote {args.output}/ for {where}\n")
    for t in manifest["inputs"]:
        out.write(f"  input  {t['name']}: {t['dtype']}[{', '.join(map(str, t['shape']))}]\n")
    for t in manifest["outputs"]:
        out.write(f"  output {t['name']}: {t['dtype']}[{', '.join(map(str, t['shape']))}]\n")
    for name, info in manifest["files"].items():
        out.write(f"  {name:<24} {info['bytes']:>10} bytes\n")
    if "exports" in manifest:
        out.write(f"  exports: {', '.join(manifest['exports'])}\n")
    if session is not None and not args.checkpoint and saved_model is None:
        out.write("  note: variables were frozen at their initial values (give --checkpoint to use trained ones)\n")
    return 0


def _load_saved_model(args):
    """(graph, session, input tensors, output tensors) of a SavedModel directory: the
    MetaGraphDef of --tag-set loaded with its variables, the tensors of --signature-def's
    inputs and outputs (in the order of their keys)."""
    from tfc import _api
    from tfc.frontend.graph import Graph
    from tfc.frontend.saved_model import loader
    from tfc.runtime.session import Session

    if args.checkpoint:
        raise SystemExit(f"tfc aot: {args.input} is a SavedModel, which holds its variables; --checkpoint is for a "
                         "GraphDef (.pb)")
    if not loader.maybe_saved_model_directory(args.input):
        raise SystemExit(f"tfc aot: {args.input}: a directory without saved_model.pb or saved_model.pbtxt (not a "
                         "SavedModel)")
    _api.build()  # registers every op type the MetaGraphDef may use
    tags = [t.strip() for t in args.tag_set.split(",") if t.strip()]
    graph = Graph()
    session = Session(graph=graph)
    try:
        try:
            meta_graph_def = loader.SavedModelLoader(args.input).load(session, tags)
        except RuntimeError as e:
            raise SystemExit(f"tfc aot: {args.input}: {_one_line(e)}") from None
        for op in graph.get_operations():
            op._user_frames = ()  # made by the SavedModel's author, not at a line of this command
        signatures = meta_graph_def.signature_def
        if args.signature_def not in signatures:
            raise SystemExit(f"tfc aot: {args.input}: no SignatureDef '{args.signature_def}' in the MetaGraphDef "
                             f"tagged {','.join(tags)}; it has: {', '.join(sorted(signatures)) or 'none'}")
        signature = signatures[args.signature_def]
        inputs = [graph.get_tensor_by_name(signature.inputs[key].name) for key in sorted(signature.inputs)]
        outputs = [graph.get_tensor_by_name(signature.outputs[key].name) for key in sorted(signature.outputs)]
    except BaseException:
        session.close()
        raise
    return graph, session, inputs, outputs


def _variables_session(graph, variables, args):
    """A session holding the variables' values: restored from --checkpoint, or their initial
    values when the graph knows its variables (a Python file); a GraphDef does not hold them."""
    import tfc.compat.v1 as tf

    known = graph.get_collection(tf.GraphKeys.GLOBAL_VARIABLES)
    if not known and not args.checkpoint:
        names = ", ".join(op.name for op in variables)
        raise SystemExit(f"tfc aot: {args.input} has variables ({names}) whose values a GraphDef does not hold; "
                         "freeze the graph (variables to constants) or give --checkpoint PREFIX")
    with graph.as_default():
        session = tf.Session(graph=graph)
        try:
            if args.checkpoint:
                # A GraphDef has no variable collection: restore the variables it needs by op name.
                saver = tf.train.Saver() if known else tf.train.Saver({op.name: op.outputs[0] for op in variables})
                saver.restore(session, args.checkpoint)
            else:
                session.run(tf.global_variables_initializer())
        except BaseException:
            session.close()
            raise
    return session


def _bench(rest) -> int:
    """Run benchmarks/ (it ships with the source checkout, beside the tfc package)."""
    try:
        from benchmarks.__main__ import main as bench_main
    except ModuleNotFoundError as e:
        if e.name != "benchmarks":
            raise
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        if not os.path.isfile(os.path.join(root, "benchmarks", "__main__.py")):
            raise SystemExit("tfc bench: benchmarks/ ships with tfc's source checkout; run it from there "
                             "(python -m benchmarks)") from None
        sys.path.insert(0, root)
        from benchmarks.__main__ import main as bench_main
    return bench_main(list(rest))


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["bench"]:
        return _bench(argv[1:])  # everything after `bench` belongs to the runner
    parser = _Parser(prog="tfc", description="tfc: TF1 graphs compiled to native code")
    parser.add_argument("--traceback", action="store_true", help="show the Python traceback of an error")
    commands = parser.add_subparsers(dest="command", required=True)

    dump = commands.add_parser("dump-ir", help="print the IR after lowering and after each pass")
    dump.add_argument("input", help="a Python file that builds a graph, or a GraphDef (.pb)")
    dump.add_argument("--fetch", action="append", required=True, help="tensor or op name to compile for")
    dump.add_argument("--feed", action="append", help="NAME:f32[?,3] — a fed tensor and its type")
    dump.add_argument("--after-all", action="store_true", help="print the IR after every pass")
    dump.add_argument("--passes", help="print only after passes whose stage name matches this regex")
    dump.add_argument("--diff", action="store_true", help="print unified diffs between printed stages")
    dump.add_argument("--fusion-report", action="store_true", help="print fused kernels and refusals")
    dump.add_argument("--timings", action="store_true",
                      help="compile to native code too and print where the compile time went (every phase, "
                           "pass and the slowest kernels to emit)")
    dump.add_argument("--verify-each", action="store_true",
                      help="verify the IR after every pass (default: once, after the last pass)")
    dump.add_argument("--dump-to", help="write NNNN.<pass>.tfcir files and index.txt to this folder")
    dump.add_argument("--target", choices=["cpu", "cuda"], default="cpu", help="compile for the CPU (default) or "
                      "an NVIDIA GPU")
    dump.add_argument("--arch", help="the CUDA architecture with --target cuda (sm_80, sm_90...; default: the "
                      "device's, else sm_80)")
    dump.add_argument("--emit", choices=["ir", "llvm", "ptx"], default="ir", help="print the IR stages (default), "
                      "or only the kernels: LLVM IR, or PTX (--target cuda)")

    aot_parser = commands.add_parser("aot", help="compile a graph into a shared library + header + weights folder")
    aot_parser.add_argument("input", help="a Python file that builds a graph, a GraphDef (.pb) or a SavedModel "
                                           "directory")
    aot_parser.add_argument("--fetch", action="append", help="tensor to compute (repeatable; a SavedModel's "
                                                             "default: its signature's outputs)")
    aot_parser.add_argument("--feed", action="append", help="NAME:f32[?,3] — an input and its type (in order)")
    aot_parser.add_argument("-o", "--output", required=True, help="the artifact folder to write")
    aot_parser.add_argument("--name", default="model", help="artifact name: lib<name>.so, <name>.h (default model)")
    aot_parser.add_argument("--target-cpu", help="host (default) or a baseline: x86-64, x86-64-v2, x86-64-v3, "
                                                 "x86-64-v4; another LLVM CPU name needs --target-features")
    aot_parser.add_argument("--target-features", help="LLVM features, e.g. +avx2,+fma (default: the CPU's)")
    aot_parser.add_argument("--target", choices=["cpu", "cuda"], default="cpu", help="a CPU library (default) or "
                            "a GPU artifact: PTX, cubin, launch plan")
    aot_parser.add_argument("--arch", help="the CUDA architecture with --target cuda (default: the device's, else "
                            "sm_80)")
    aot_parser.add_argument("--checkpoint", help="restore variables from this checkpoint prefix (default: "
                                                 "their initial values)")
    aot_parser.add_argument("--tag-set", default="serve", help="a SavedModel's MetaGraphDef: its tags, comma-"
                                                               "separated (default serve)")
    aot_parser.add_argument("--signature-def", default="serving_default",
                            help="a SavedModel's signature: its inputs are the inputs (in key order), its outputs "
                                 "the outputs (default serving_default)")

    commands.add_parser("demo", help="build, compile and run a small model, with timings")
    bench = commands.add_parser("bench", help="run the benchmarks against numpy and installed peers")
    bench.add_argument("rest", nargs=argparse.REMAINDER)

    args, unknown = parser.parse_known_args(argv)
    if unknown:
        commands.choices[args.command].error(f"unrecognized arguments: {' '.join(unknown)}")
    try:
        return _run(args)
    except SystemExit:
        raise
    except BrokenPipeError:  # the reader stopped (`tfc dump-ir ... | head`): no more output, no message
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    except Exception as e:  # noqa: BLE001 - one line, not a traceback (unless --traceback)
        if args.traceback:
            raise
        raise SystemExit(f"tfc {args.command}: {_error_text(e)}") from None


def _run(args) -> int:
    if args.command == "dump-ir":
        return dump_ir(args)
    if args.command == "aot":
        return aot(args)
    if args.command == "demo":
        from tfc.demo import run_demo

        return run_demo()
    if args.command == "bench":
        return _bench(args.rest)
    return 1


def _error_text(error: Exception) -> str:
    """What a user can act on; an error that is not a known user mistake is named as internal."""
    from tfc.frontend.errors import OpError

    if isinstance(error, (ValueError, KeyError, OSError, OpError)):
        return _one_line(error)
    return f"internal error: {type(error).__name__}: {_one_line(error)} (rerun with tfc --traceback to see where)"


if __name__ == "__main__":
    sys.exit(main())
