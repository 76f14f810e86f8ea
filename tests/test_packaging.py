"""What a user installs: declared dependencies that are really used, the version, the license, the wheel."""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from helpers import run_cli

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the same parser from PyPI (the test extra installs it there)
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))["project"]
IMPORT_NAMES = {"scikit-learn": "sklearn", "pyyaml": "yaml", "llama-cpp-python": "llama_cpp"}


def _name(requirement: str) -> str:
    return re.split(r"[<>=!\[; ]", requirement, maxsplit=1)[0].lower()


def _imported_modules() -> set[str]:
    found: set[str] = set()
    for path in (REPO / "src").rglob("*.py"):
        for match in re.finditer(r"^\s*(?:from|import)\s+([A-Za-z_]\w*)", path.read_text("utf-8"), re.MULTILINE):
            found.add(match[1])
    return found


@pytest.mark.parametrize("requirement", PROJECT["dependencies"] + PROJECT["optional-dependencies"]["hf"])
def test_every_declared_dependency_is_imported_somewhere(requirement):
    name = _name(requirement)
    assert IMPORT_NAMES.get(name, name.replace("-", "_")) in _imported_modules(), f"{name} is never imported"


def test_version_flag_prints_the_declared_version():
    done = run_cli("--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"trusteval {PROJECT['version']}"


def test_the_license_file_is_the_apache_2_text_pyproject_declares():
    assert PROJECT["license"] == "Apache-2.0"
    text = (REPO / "LICENSE").read_text("utf-8")
    assert "Apache License\n                           Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text and len(text.splitlines()) == 202


def test_classifiers_name_every_python_from_requires_python_on_and_no_other():
    """The classifiers list the Python versions whose tests passed (docs/packaging.md); requires-python starts at
    the lowest of them with no upper cap (a cap makes pip fall back to an older release, not refuse), and the
    list has no gaps."""
    versions = sorted(
        tuple(int(part) for part in classifier.rsplit(" ", 1)[1].split("."))
        for classifier in PROJECT["classifiers"]
        if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", classifier)
    )
    assert versions, "no Programming Language :: Python :: 3.X classifier"
    low, high = versions[0], versions[-1]
    assert versions == [(3, minor) for minor in range(low[1], high[1] + 1)]
    assert PROJECT["requires-python"].replace(" ", "") == f">={low[0]}.{low[1]}"


@pytest.mark.slow
def test_the_wheel_holds_the_data_files_and_the_license(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", tmp_path, REPO],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    (wheel,) = tmp_path.glob("trusteval-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for expected in (
        "trusteval/py.typed",
        "trusteval/data/sources.json",
        "trusteval/scorers/prompts/refusal_v1.txt",
        "trusteval/lexicon/en.tsv",
        "trusteval/lexicon/zh.tsv",
        "trusteval/lexicon/en_context.tsv",
    ):
        assert expected in names
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    metadata = zipfile.ZipFile(wheel).read(f"trusteval-{PROJECT['version']}.dist-info/METADATA").decode()
    assert "License-Expression: Apache-2.0" in metadata
    assert "Requires-Dist: sniffio" not in metadata
    assert "Project-URL: " in metadata and "Classifier: Typing :: Typed" in metadata


def test_building_the_parser_does_not_look_up_the_version(monkeypatch):
    """importlib.metadata's lookup scans every installed distribution: only `--version` pays for it."""
    from trusteval import cli

    monkeypatch.setattr(cli, "installed_version", lambda: pytest.fail("the version was looked up"))
    assert cli.build_parser().parse_args(["report"]).command == "report"


@pytest.mark.slow
def test_plugins_of_every_kind_come_from_one_read_of_the_installed_entry_points(monkeypatch):
    """A run looks up benchmarks, datasets, backends and scorers: each lookup of a kind read every installed
    distribution's metadata again (about 4 ms each here); now the first one reads them for all."""
    import importlib.metadata

    from trusteval import registry

    reads = []
    found = importlib.metadata.EntryPoints(
        [importlib.metadata.EntryPoint(name=n, value="pkg.mod:make", group=f"trusteval.{kind}s")
         for n, kind in [("w1", "widget"), ("g1", "gadget"), ("w2", "widget")]]
    )  # fmt: skip
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda: reads.append(1) or found)
    registry.installed_entry_points.cache_clear()
    try:
        widgets, gadgets, others = registry.Registry("widget"), registry.Registry("gadget"), registry.Registry("other")
        widgets.register("built-in", "pkg.mod:builtin")
        assert widgets.names() == ["built-in", "w1", "w2"] and gadgets.names() == ["g1"] and others.names() == []
        assert len(reads) == 1
    finally:
        registry.installed_entry_points.cache_clear()
