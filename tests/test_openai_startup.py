"""Fixed costs an API run pays per request or per process (the `openai` backend, start-up), kept down."""

from __future__ import annotations

import subprocess
import sys

import pytest

# Counts the import system's searches for sniffio while httpcore asks which async library runs, 20 times.
SNIFFIO_SEARCHES = """
import asyncio, importlib.util, sys
if importlib.util.find_spec("sniffio") is not None:
    print("installed")
    raise SystemExit
searches = []

class Spy:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name == "sniffio":
            searches.append(name)
        return None

if "--import" in sys.argv or "--backend" in sys.argv:
    from trusteval.models import BackendSettings, ModelSpec
    from trusteval.models.openai import create
if "--backend" in sys.argv:
    create(ModelSpec.parse("openai:m?base_url=http://127.0.0.1:9/v1"), BackendSettings())
sys.meta_path.insert(0, Spy)
from httpcore._synchronization import current_async_library

async def ask():
    return {current_async_library() for _ in range(20)}

print(asyncio.run(ask()), len(searches))
"""


def sniffio_searches(*flags: str) -> str:
    done = subprocess.run([sys.executable, "-c", SNIFFIO_SEARCHES, *flags], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    if done.stdout.strip() == "installed":
        pytest.skip("sniffio is installed here: its import is cached like any other")
    return done.stdout.strip()


def test_without_sniffio_httpcore_searches_for_it_on_every_call():
    """The cost the backend removes: each failed `import sniffio` searches sys.path again (about 0.1 ms)."""
    assert sniffio_searches() == "{'asyncio'} 20"


@pytest.mark.slow
def test_the_backend_records_sniffio_as_missing_once():
    assert sniffio_searches("--backend") == "{'asyncio'} 0"


@pytest.mark.slow
def test_importing_the_backend_leaves_sys_modules_alone():
    """The workaround is applied when a backend is created, not as a side effect of an import."""
    assert sniffio_searches("--import") == "{'asyncio'} 20"


FIRST_IMPORTS = """
import gc, sys
collections = []
gc.callbacks.append(lambda phase, info: phase == "start" and collections.append(info["generation"]))
from trusteval.commands.common import first_imports
with first_imports("trusteval.pipeline"):
    collections.clear()
    import trusteval.config, trusteval.pipeline
print(len(collections), gc.get_freeze_count() > 10000, gc.isenabled())
frozen = gc.get_freeze_count()
with first_imports("trusteval.pipeline"):
    import json
print(gc.get_freeze_count() == frozen)
"""


@pytest.mark.slow
def test_a_run_imports_its_modules_without_collecting_and_freezes_them_once():
    """Collections while the run's modules are imported, and later full ones over those module objects, cost
    about 30 ms of a short run; a second call (a process that runs again) freezes nothing."""
    done = subprocess.run([sys.executable, "-c", FIRST_IMPORTS], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["0", "True", "True", "True"]
