"""`make html`: the static site builds from stored outputs, has every page, and no broken link;
headings with code read whole in the navigation and the tables of contents; in headless Chromium
(skipped where it or its driver is missing), no code cell needs a horizontal scrollbar in a
1400-pixel window, and the cheat sheet prints on at most two pages."""

from __future__ import annotations

import base64
import importlib.util
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
    result = subprocess.run(
        [sys.executable, "-m", "tools.build_site", "--site-dir", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
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


@pytest.mark.course  # builds the site with mkdocs (about 20 s)
def test_headings_with_code_read_whole_in_the_navigation_and_the_table_of_contents(site):
    page = (site / "notebooks" / "02_batches_drop_last_and_samplers.html").read_text()
    assert "5. shuffle=True is a RandomSampler" in page, "the table of contents lost the heading's code"
    assert 'href="#5-shuffletrue-is-a-randomsampler"' in page  # the heading's own id
    assert "Batch sizes, drop_last and samplers" in page and "Batch sizes, `drop_last`" not in page


CHROMIUM, DRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")
PAGES = [
    "notebooks/03_workers_and_prefetch.html",
    "notebooks/08_hangs_crashes_and_lifecycle.html",
    "solutions/03_fast_loader.html",
    "docs/cheatsheet.html",
    "docs/recipes.html",
]
SCROLLING = """return Array.from(document.querySelectorAll('.md-content pre'))
    .filter(e => e.offsetParent !== null && e.scrollWidth > e.clientWidth + 1)
    .map(e => e.textContent.split('\\n').sort((a, b) => b.length - a.length)[0].slice(0, 80));"""


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    if not (CHROMIUM.exists() and DRIVER.exists() and importlib.util.find_spec("selenium")):
        pytest.skip("needs Chromium, chromedriver and selenium (apt-get install chromium chromium-driver)")
    from selenium import webdriver

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1400,1000",
        f"--user-data-dir={tmp_path_factory.mktemp('chromium')}",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path=str(DRIVER)))
    yield driver
    driver.quit()


@pytest.mark.course  # builds the site with mkdocs (about 20 s)
@pytest.mark.parametrize("page", PAGES)
def test_code_fits_the_content_column(site, browser, page):
    browser.get((site / page).as_uri())
    assert browser.execute_script(SCROLLING) == [], f"{page}: code cells with a horizontal scrollbar"


@pytest.mark.course  # builds the site with mkdocs (about 20 s)
def test_the_cheat_sheet_prints_on_two_pages_at_most(site, browser):
    browser.get((site / "docs" / "cheatsheet.html").as_uri())
    a4 = {"paperWidth": 8.27, "paperHeight": 11.69}
    pdf = base64.b64decode(browser.execute_cdp_cmd("Page.printToPDF", a4)["data"])
    pages = len(re.findall(rb"/Type\s*/Page[^s]", pdf))
    assert 1 <= pages <= 2, f"the cheat sheet prints on {pages} A4 pages"
