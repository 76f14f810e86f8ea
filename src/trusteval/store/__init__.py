"""The SQLite store of a workspace folder and everything that reads or writes it.

`core` (the `Store`: one file per workspace, every write), `migrations` (the schema: named migration functions,
append-only), `reads` (every read of a run's rows and scores), `run_record` (a run's aggregates - tasks, data,
models, shard, timings, metrics, tables - read and written by name), `rows` (rows to records), `views` (sequences
over a run that hold no rows), `run_owner` (which process runs a run, and whether it is alive), `leases` (request
keys claimed by one process at a time), `merge` (shard stores joined into one) and `shards` (the arithmetic of
`--shard i/n`).
"""

from trusteval.store.core import MIGRATIONS, STORE_FILENAME, RunItem, Store

__all__ = ["MIGRATIONS", "STORE_FILENAME", "RunItem", "Store"]
