"""Every link of the course resolves where it is read (#35.4): in notebook markdown, in the
doctor's `see:` lines stored in the notebooks' outputs, in docs/*.md and README.md. A link to a
notebook section uses JupyterLab's anchor form (the heading text with spaces turned into `-`,
punctuation and case kept); a link to a heading of a Markdown page uses the site's form (mkdocs'
Python-Markdown slug); a relative link names a file that exists. tools/links.py does the work
(run it to list what is broken); the failure lists each broken link with the closest heading.
On the static site the notebook links are rewritten into the site's own ids (tools/site_hooks.py;
tests/test_site.py checks the built site)."""

from __future__ import annotations

import json

from course_code import ROOT

from tools import links


def test_a_notebook_heading_has_jupyterlabs_anchor():
    cases = [
        ("4. Persistent workers and stale dataset state", "4.-Persistent-workers-and-stale-dataset-state"),
        (
            "3. torch's own warning, and what extra workers cost",
            "3.-torch's-own-warning,-and-what-extra-workers-cost",
        ),
        (
            "2. How many workers? Two kinds of slow `__getitem__`",
            "2.-How-many-workers?-Two-kinds-of-slow-__getitem__",
        ),
        ("5. `shuffle=True` is a `RandomSampler`", "5.-shuffle=True-is-a-RandomSampler"),
        ("1. **Bold** and a [link](x.md)", "1.-Bold-and-a-link"),
    ]
    for heading, anchor in cases:
        assert links.notebook_anchor(heading) == anchor


def test_a_page_heading_has_the_sites_anchor():
    # Python-Markdown's toc slugify, which mkdocs uses for docs/*.md
    assert links.page_anchor("04 · Custom datasets — and caching") == "04-custom-datasets-and-caching"
    assert links.page_anchor("`pin_memory` without a GPU") == "pin_memory-without-a-gpu"


def test_a_broken_link_is_reported_with_the_closest_heading(tmp_path):
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text("[ok](notebooks/a.ipynb#1.-Two-words)\n[gone](missing.md)\n")
    cell = {
        "cell_type": "markdown",
        "metadata": {},
        "source": ["# A\n", "## 1. Two words\n", "[bad](#1-two-words)\n"],
    }
    notebook = {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "notebooks" / "a.ipynb").write_text(json.dumps(notebook))
    found = links.broken(tmp_path)
    assert len(found) == 2, found
    assert any("#1-two-words" in line and "closest: #1.-Two-words" in line for line in found), found
    assert any("missing.md" in line for line in found), found


def test_every_link_in_notebooks_outputs_and_docs_resolves():
    found = links.broken()
    assert not found, (
        f"{len(found)} links do not resolve where they are read "
        f"(file: (link) why; closest):\n" + "\n".join(found)
    )


def test_the_site_rewrites_a_jupyterlab_anchor_into_the_id_it_gives_that_heading():
    """On the static site mkdocs-jupyter ids a notebook heading by its slug; tools/site_hooks.py
    rewrites every JupyterLab-form link into it. For every heading of every notebook, the
    rewritten anchor is the id the site gives that heading."""
    from mkdocs_jupyter.utils import slugify

    from tools.site_hooks import rewrite_links, site_anchor

    for nb in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for heading in links.headings(links.notebook_markdown(nb)):
            assert site_anchor(links.notebook_anchor(heading)) == slugify(links.plain(heading)), heading

    class Page:  # what the hook reads of mkdocs' page
        class file:
            src_path = "notebooks/12_start_methods.ipynb"

    html = (
        '<a href="08_hangs_crashes_and_lifecycle.ipynb#4.-Persistent-workers-and-stale-dataset-state">'
        '<a href="#2.-What-each-worker-receives"><a href="https://example.org/x#Keep-Me">'
    )
    assert rewrite_links(html, Page) == (
        '<a href="08_hangs_crashes_and_lifecycle.html#4-persistent-workers-and-stale-dataset-state">'
        '<a href="#2-what-each-worker-receives"><a href="https://example.org/x#Keep-Me">'
    )
