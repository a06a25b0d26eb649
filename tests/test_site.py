"""`make html`: the static site builds from stored outputs, has every page, and no broken link."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
from course_code import ROOT

HREF = re.compile(r'(?:href|src)="([^"]+)"')


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    result = subprocess.run([sys.executable, "tools/build_site.py", "--site-dir", str(out)], cwd=ROOT,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    return out


@pytest.mark.course
def test_every_notebook_lab_and_solution_has_a_page_with_its_plots(site):
    for folder in ("notebooks", "labs", "solutions"):
        for nb in sorted((ROOT / folder).glob("*.ipynb")):
            page = site / folder / f"{nb.stem}.html"
            assert page.exists(), f"no page for {folder}/{nb.name}"
            html = page.read_text()
            if '"image/png"' in nb.read_text():
                assert "data:image/png;base64" in html, f"{page.name} lost its plots"
    assert (site / "index.html").exists()
    for doc in sorted((ROOT / "docs").glob("*.md")):
        assert (site / "docs" / f"{doc.stem}.html").exists(), f"no page for docs/{doc.name}"


@pytest.mark.course
def test_every_internal_link_resolves(site):
    broken = []
    for page in site.rglob("*.html"):
        if page.name == "404.html":  # served from any depth, so it links from the site root
            continue
        for link in HREF.findall(page.read_text()):
            parsed = urlparse(link)
            if parsed.scheme or link.startswith(("#", "mailto:", "data:", "//")) or not parsed.path:
                continue
            target = (page.parent / unquote(parsed.path)).resolve()
            if not target.exists():
                broken.append(f"{page.relative_to(site)} -> {link}")
    assert not broken, f"{len(broken)} broken links, e.g. {broken[:5]}"
