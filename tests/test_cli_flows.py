"""Multi-step CLI flows a user runs (found by exploratory QA): each test goes through the real CLI."""

from __future__ import annotations

from helpers import run_cli


def test_a_merge_refused_for_a_missing_source_writes_nothing(tmp_path) -> None:
    done = run_cli("merge", tmp_path / "no-such-store", "--into", tmp_path / "merged")
    assert done.returncode == 2 and "no store in" in done.stderr
    assert not (tmp_path / "merged").exists(), "exit 2 promises nothing written"


def test_report_and_export_of_a_store_with_no_runs_say_so(tmp_path) -> None:
    from trusteval.store import Store

    Store.open(tmp_path / "empty").close()
    for command in ("report", "export"):
        done = run_cli(command, "--store", tmp_path / "empty")
        assert done.returncode == 2
        assert f"no runs in '{tmp_path / 'empty'}' yet" in done.stderr and "'None'" not in done.stderr
