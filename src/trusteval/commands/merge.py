"""`trusteval merge STORE... --into DIR`: join the stores of `trusteval run --shard i/n` (or of any runs made
on several machines) into one, then recompute the metrics and tables of every joined run over all its rows.

    trusteval merge shard-0 shard-1 shard-2 --into merged [--json] [--on-conflict refuse|first|last]

Stores that hold different answers or scores under one key conflict: by default the merge is refused (exit 2,
nothing written, the conflicts counted); `--on-conflict first|last` chooses a side (`trusteval.store.merge_rows`).
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from trusteval.untrusted.safetext import one_line

if TYPE_CHECKING:
    from trusteval.store import Store


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser("merge", help="join stores (e.g. of --shard runs) into one and recompute tables")
    parser.add_argument("stores", nargs="+", help="workspace folders to read")
    parser.add_argument("--into", required=True, help="workspace folder to write (created if missing)")
    parser.add_argument("--json", action="store_true", help="print one JSON object describing the merge")
    parser.add_argument(
        "--on-conflict",
        choices=("refuse", "first", "last"),
        default="refuse",
        help="different answers or scores under one key: refuse the merge (default, exit 2, nothing written), "
        "keep the first seen (the target's, then the sources in order) or the last",
    )
    parser.set_defaults(handler=cmd_merge)


def cmd_merge(args: argparse.Namespace) -> int:
    from pathlib import Path

    from trusteval.commands.jsonout import print_json
    from trusteval.store import Store
    from trusteval.store.merge import conflicts_of, merge_stores
    from trusteval.store.merge_rows import MergeConflictError

    sources = [Path(folder) for folder in args.stores]
    conflicts = conflicts_of(Path(args.into), sources)  # every check before the target is created or opened
    if conflicts.total and args.on_conflict == "refuse":
        if args.json:
            print_json({"into": args.into, "refused": True, "on_conflict": args.on_conflict,
                        "conflicts": conflicts.as_dict()})  # fmt: skip
        raise MergeConflictError(conflicts)
    store = Store.open(args.into)
    try:
        merged = merge_stores(store, sources, on_conflict=args.on_conflict, conflicts=conflicts)
        runs = {run_id: _finish_run(store, run_id, shards) for run_id, shards in merged.runs.items()}
    finally:
        store.close()
    if args.json:
        print_json({"into": args.into, "added": merged.added, "runs": runs, "on_conflict": args.on_conflict,
                    "conflicts": conflicts.as_dict(), "replaced": merged.replaced})  # fmt: skip
    else:
        if conflicts.total:
            line = f"warning: {conflicts.summary()}; kept the {args.on_conflict} store's rows (--on-conflict)"
            print(one_line(line), file=sys.stderr)
        for run_id, outcome in runs.items():
            line = f"{run_id}: {outcome['status']}, {outcome['items']} items" + _missing_text(outcome)
            print(one_line(line), file=sys.stderr)
            if len(outcome["datasets"]) > 1:
                print(one_line(_mixed_text(run_id, outcome["datasets"])), file=sys.stderr)
        print(one_line(f"merged {len(args.stores)} stores into {args.into}"), file=sys.stderr)
    return 0


def _missing_text(outcome: dict[str, Any]) -> str:
    missing = outcome["missing_shards"]
    return f"; shards missing: {', '.join(missing)} (merge them too)" if missing else ""


def _mixed_text(run_id: str, datasets: list[str]) -> str:
    return (
        f"warning: {run_id} joins rows of {len(datasets)} versions of its data ({', '.join(datasets)}): its shards "
        "read different data files, so its tables mix them; rerun the shards on one version of the file"
    )


def _finish_run(store: Store, run_id: str, shards: dict[str, str]) -> dict[str, Any]:
    """Recompute the joined run's metrics and tables from its rows; its status is its least finished shard's,
    incomplete while shards are missing."""
    from trusteval.report.results import run_results
    from trusteval.store.merge import merged_status, missing_shards, run_datasets
    from trusteval.store.run_owner import run_status
    from trusteval.store.run_record import RunRecord

    results = run_results(store, run_id)
    RunRecord(store, run_id).record_results(results.metrics, [t.as_dict() for t in results.tables])
    missing = missing_shards(set(shards))
    store.finish_run(run_id, merged_status(shards))
    info = store.run_info(run_id) or {}
    status = run_status(store, run_id, info.get("status", ""))  # a shard whose process died: interrupted
    items = next((r["items"] for r in store.runs() if r["run_id"] == run_id), 0)
    datasets = run_datasets(store, run_id)
    return {"status": status, "items": items, "missing_shards": missing, "datasets": datasets}
