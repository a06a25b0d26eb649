"""Build the static site under site/ from the stored executed notebooks (`make html`).

Usage: python -m tools.build_site [--site-dir DIR]   (default: site/)
Stages README.md (as the index, with the course map), docs/*.md, notebooks/ and solutions/
into build/site-src, writes the navigation, then runs `mkdocs build`. Nothing is executed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

try:  # imported as tools.build_site (python -m, the tests)
    from tools.course_files import notebooks_in
except ImportError:  # run as a script, `python tools/build_site.py`: its folder is on sys.path
    from course_files import notebooks_in  # type: ignore[no-redef]

ROOT = Path(__file__).resolve().parent.parent
STAGE = ROOT / "build" / "site-src"


def plain(markdown: str) -> str:
    """Return a heading's text as a title: no code marks, emphasis or link syntax."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", markdown)  # [text](url) -> text
    text = re.sub(r"\*{1,2}([^*]+)\*{1,2}", r"\1", text)  # **bold**, *emphasis*
    return text.replace("`", "").strip()


def _title(path: Path) -> str:
    if path.suffix == ".ipynb":
        for cell in json.loads(path.read_text())["cells"]:
            if cell["cell_type"] == "markdown":
                first = "".join(cell["source"]).strip().splitlines()[0]
                return plain(first.lstrip("# "))
    for line in path.read_text().splitlines():
        if line.startswith("# "):
            return plain(line[2:])
    return path.stem.replace("_", " ")


def stage() -> list:
    if STAGE.exists():
        shutil.rmtree(STAGE)
    STAGE.mkdir(parents=True)
    shutil.copy(ROOT / "README.md", STAGE / "index.md")
    nav: list = [{"Course map": "index.md"}]
    for folder, label in (("notebooks", "Notebooks"), ("labs", "Labs"), ("solutions", "Lab solutions")):
        (STAGE / folder).mkdir()
        pages = []
        for nb in notebooks_in(folder):
            shutil.copy(nb, STAGE / folder / nb.name)
            pages.append({_title(nb): f"{folder}/{nb.name}"})
        if pages:
            nav.append({label: pages})
    docs = sorted((ROOT / "docs").glob("*.md")) if (ROOT / "docs").is_dir() else []
    if docs:
        (STAGE / "docs").mkdir()
        for page in [*docs, *sorted((ROOT / "docs").glob("*.css"))]:
            shutil.copy(page, STAGE / "docs" / page.name)
        nav.append({"Reference": [{_title(p): f"docs/{p.name}"} for p in docs]})
    return nav


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.build_site", description=__doc__.split("\n")[0] if __doc__ else None
    )
    parser.add_argument(
        "--site-dir", type=Path, default=ROOT / "site", help="where the site goes (default: site/)"
    )
    site_dir = parser.parse_args(argv).site_dir.resolve()
    nav = stage()
    config = ROOT / "build" / "mkdocs.generated.yml"
    base = (ROOT / "mkdocs.yml").read_text()
    base = base.replace("docs_dir: build/site-src", f"docs_dir: {STAGE}").replace(
        "site_dir: site", f"site_dir: {site_dir}"
    )
    hooks = json.dumps([str(ROOT / "tools" / "site_hooks.py")])
    config.write_text(base + "hooks: " + hooks + "\nnav: " + json.dumps(nav) + "\n")
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "-q", "-f", str(config)], cwd=ROOT, env=env
    ).returncode


if __name__ == "__main__":
    sys.exit(main())
