"""Lab checkers: ``check_<name>(candidate) -> bool``, one per exercise.

Each prints one line: ``✅`` and a short confirmation, ``❌`` and one sentence saying what is
wrong plus a hint, or ``⏳ not attempted yet`` for an unfinished stub. A candidate that raises
is reported as ``❌`` with the exception's one-line summary; a checker never prints a
traceback. Checkers test behaviour (they run the candidate in real DataLoaders), not source.
"""

from loaderlab.checks.report import Wrong, checker, one_line

__all__ = ["Wrong", "checker", "one_line"]
