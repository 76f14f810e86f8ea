"""A run of one benchmark over one or more models: prepare (checks before anything is written), run (the
stages in order), generate, score; results are read back by report/results.py."""

from trusteval.pipeline.run import RunContext, execute, execute_async
from trusteval.pipeline.summary import RunSummary

__all__ = ["RunContext", "RunSummary", "execute", "execute_async"]
