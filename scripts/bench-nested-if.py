#!/usr/bin/env python3
"""Memory of a model with nested `If` subgraphs (issue 34 item 11): writes an ONNX model whose graph
is `depth` nested `If`s (condition a constant, so a runtime can fold it), each branch adding its own
`weights`-float initializer to the input, then runs `trtmc-bench run --onnx` on it (build included,
1 call) and reports the file size and the maximum resident set size of the command and its children.

    scripts/bench-nested-if.py --bin target/release/trtmc-bench --depth 4 --weights 262144
"""

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def branch(depth: int, width: int, tag: str) -> onnx.GraphProto:
    """A subgraph computing `x + w_tag` and, below depth 0, another nested If on the result."""
    w = numpy_helper.from_array(np.full([width], 0.5, dtype=np.float32), f"w_{tag}")
    nodes = [helper.make_node("Add", ["x", f"w_{tag}"], [f"a_{tag}"])]
    out = f"a_{tag}"
    if depth > 0:
        cond = numpy_helper.from_array(np.array(True), f"c_{tag}")
        nodes.append(
            helper.make_node(
                "If",
                [f"c_{tag}"],
                [f"o_{tag}"],
                then_branch=rename(branch(depth - 1, width, tag + "t"), out),
                else_branch=rename(branch(depth - 1, width, tag + "e"), out),
            )
        )
        out = f"o_{tag}"
        inits = [w, cond]
    else:
        inits = [w]
    y = helper.make_tensor_value_info(out, TensorProto.FLOAT, [width])
    return helper.make_graph(nodes, f"g_{tag}", [], [y], initializer=inits)


def rename(graph: onnx.GraphProto, source: str) -> onnx.GraphProto:
    """The subgraph reading `source` of the enclosing scope where it reads `x`."""
    for node in graph.node:
        node.input[:] = [source if i == "x" else i for i in node.input]
    return graph


def model(depth: int, width: int) -> onnx.ModelProto:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [width])
    inner = branch(depth, width, "r")
    inner = rename(inner, "x")
    graph = helper.make_graph(
        list(inner.node),
        "nested_if",
        [x],
        [helper.make_tensor_value_info(inner.output[0].name, TensorProto.FLOAT, [width])],
        initializer=list(inner.initializer),
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", action="append", required=True)
    ap.add_argument("--depth", type=int, default=4)
    ap.add_argument("--weights", type=int, default=262144)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "nested_if.onnx"
        onnx.save(model(args.depth, args.weights), path)
        size = path.stat().st_size / 2**20
        probe = (
            "import resource, subprocess, sys\n"
            "p = subprocess.run(sys.argv[1:], capture_output=True)\n"
            "print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)\n"
            "sys.stderr.write(p.stderr.decode(errors='replace')[-600:])\n"
        )
        for exe in args.bin:
            argv = [exe, "run", "--onnx", str(path), "--iterations", "1", "--warmup", "0",
                    "--telemetry", "off", "--quiet", "-o", str(Path(tmp) / "out"),
                    "--bundle-cache", str(Path(tmp) / f"cache-{abs(hash(exe))}")]
            out = subprocess.run([sys.executable, "-c", probe, *argv], capture_output=True, text=True)
            code, rss = out.stdout.split()
            print(f"{exe}: depth {args.depth}, file {size:.1f} MiB, exit {code}, max RSS {float(rss):.0f} MiB "
                  f"({float(rss) / size:.0f}x the file)")
            if code != "0":
                sys.stderr.write(out.stderr)
            subprocess.run(["rm", "-rf", str(Path(tmp) / "out")])


if __name__ == "__main__":
    main()
