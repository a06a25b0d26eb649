"""The course's maintenance tools, run from the repository root as `python -m tools.NAME`
(course.py and preflight.py also as `python3 tools/NAME.py`, before anything is installed)."""
