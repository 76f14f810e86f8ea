"""Run a notebook's code cells in order, in one namespace, and store their outputs in the notebook (nbformat 4).

    MPLBACKEND=Agg python scripts/fill_notebook_outputs.py docs/example.ipynb [--cwd DIR]

For machines without Jupyter (no nbclient or kernel): what a cell prints becomes a `stream` output, its last
expression an `execute_result` (text/plain, and text/html for objects with `_repr_html_`, such as DataFrames),
and every matplotlib figure it left open a `display_data` PNG. A cell that raises stops the run (exit 1), so a
notebook with outputs is one whose every cell ran. With nbclient installed, `jupyter nbconvert --execute
--to notebook --inplace` does the same in a real kernel.
"""

from __future__ import annotations

import argparse
import ast
import base64
import contextlib
import io
import json
import os
import sys
from pathlib import Path
from typing import Any


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def _result(value: Any, count: int) -> dict[str, Any]:
    data = {"text/plain": _lines(repr(value))}
    html = getattr(value, "_repr_html_", None)
    if callable(html):
        shown = html()
        if shown:
            data["text/html"] = _lines(shown)
    return {"output_type": "execute_result", "execution_count": count, "metadata": {}, "data": data}


def _figures() -> list[dict[str, Any]]:
    if "matplotlib.pyplot" not in sys.modules:
        return []
    import matplotlib.pyplot as plt

    found = []
    for number in plt.get_fignums():
        buffer = io.BytesIO()
        plt.figure(number).savefig(buffer, format="png", dpi=80, bbox_inches="tight")
        found.append({"output_type": "display_data", "metadata": {},
                      "data": {"image/png": base64.b64encode(buffer.getvalue()).decode("ascii"),
                               "text/plain": [f"<Figure {number}>"]}})  # fmt: skip
    plt.close("all")
    return found


def run_cell(source: str, namespace: dict[str, Any], count: int) -> list[dict[str, Any]]:
    tree = ast.parse(source)
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    printed = io.StringIO()
    value = None
    with contextlib.redirect_stdout(printed):
        exec(compile(tree, "<cell>", "exec"), namespace)
        if last is not None:
            value = eval(compile(ast.Expression(last.value), "<cell>", "eval"), namespace)
    outputs: list[dict[str, Any]] = []
    if printed.getvalue():
        outputs.append({"output_type": "stream", "name": "stdout", "text": _lines(printed.getvalue())})
    hidden = source.rstrip().endswith(";")
    if value is not None and not hidden:
        outputs.append(_result(value, count))
    return outputs + _figures()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebook", type=Path)
    parser.add_argument("--cwd", type=Path, help="run the cells in this folder (default: the notebook's)")
    args = parser.parse_args()
    path = args.notebook.resolve()
    notebook = json.loads(path.read_text(encoding="utf-8"))
    os.chdir(args.cwd or path.parent)
    namespace: dict[str, Any] = {"__name__": "__main__"}
    count = 0
    for cell in notebook["cells"]:
        if cell["cell_type"] != "code":
            continue
        count += 1
        cell["execution_count"] = count
        cell["outputs"] = run_cell("".join(cell["source"]), namespace, count)
    path.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{path}: {count} code cells run, outputs stored", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
