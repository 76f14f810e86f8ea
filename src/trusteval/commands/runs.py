"""`trusteval runs`: list the runs in a store: id, benchmark, dataset, models, status and size.

trusteval runs [--store DIR] [--json]
"""

from __future__ import annotations

import argparse

from trusteval.commands.jsonout import print_json
from trusteval.untrusted.safetext import one_line


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    runs = commands.add_parser("runs", help="list the runs in a store")
    runs.add_argument("--store", default=None, help="workspace folder")
    runs.add_argument("--json", action="store_true", help="print one JSON object listing the runs")
    runs.set_defaults(handler=cmd_runs)


def cmd_runs(args: argparse.Namespace) -> int:
    from trusteval.commands.common import open_store
    from trusteval.models.sampling import one_line as settings_line
    from trusteval.report.unpinned import unpinned_files
    from trusteval.store.run_owner import run_status
    from trusteval.store.run_record import RunRecord

    store, folder = open_store(args.store)
    try:
        models = {row["run_id"]: list(row["spec"].get("models") or []) for row in store.run_rows()}
        runs = [
            {
                **run,
                "models": models.get(run["run_id"], []),
                "status": run_status(store, run["run_id"], run["status"]),
                "unpinned_data": bool(unpinned_files(store.aggregate(run["run_id"], "data"))),
                "sampling": RunRecord(store, run["run_id"]).sampling(),
            }
            for run in store.runs()
        ]
    finally:
        store.close()
    if args.json:
        print_json({"store": folder, "runs": runs})
        return 0
    for run in runs:
        fields = (run["run_id"], run["benchmark"], run["dataset"], ",".join(run["models"]), run["status"],
                  f"{run['items']} items")  # fmt: skip
        fields += ("unpinned data (--allow-unpinned-data)",) if run["unpinned_data"] else ()
        print("\t".join(one_line(str(f)) for f in fields))
        for model, described in run["sampling"].items():
            print("  " + one_line(f"sampling {model}: {settings_line(described)}"))
    return 0
