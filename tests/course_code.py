"""Load the course's own code in tests: the snippets of docs/snippets/ and the lesson modules
the notebooks write (notebooks/lessonNN.py), the one source of each."""

from __future__ import annotations

import contextlib
import http.server
import importlib
import importlib.util
import threading
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent  # the one ROOT of the tests: `from course_code import ROOT`


def snippet(name: str) -> ModuleType:
    """Return docs/snippets/<name>.py, executed as a fresh module."""
    spec = importlib.util.spec_from_file_location(
        f"snippet_{name}", ROOT / "docs" / "snippets" / f"{name}.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def lesson(name: str) -> ModuleType:
    """Return notebooks/<name>.py imported by name, as workers import it (lesson modules may
    import each other)."""
    return importlib.import_module(name)  # notebooks/ is on pytest's pythonpath (pyproject)


@contextlib.contextmanager
def static_server(folder: Path) -> Iterator[str]:
    """Serve ``folder`` on 127.0.0.1 (a stand-in package index); yield its URL, ending in '/'."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(folder), **kwargs)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
