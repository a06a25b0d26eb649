"""mkdocs hooks for the course's static site (`make html`, tools/build_site.py).

mkdocs-jupyter builds a notebook's table of contents from its Markdown export, which drops the
code spans of a heading: "5. `shuffle=True` is a `RandomSampler`" became "5. is a", linked to an
anchor that does not exist. After it has rendered a notebook, ``on_page_content`` builds the
page's table of contents (and title) again from the notebook's own Markdown cells, so its titles
are whole and its anchors are the headings' ids. Public APIs only: mkdocs' page hook and
``get_toc``, Python-Markdown's ``toc_tokens`` (mkdocs-jupyter's private ``_get_nb_toc_tokens``
used to be patched here).
"""

from __future__ import annotations

from typing import Any

import markdown
import nbformat
from markdown.extensions.toc import TocExtension
from mkdocs.structure.toc import get_toc

DEFAULT_TOC_DEPTH = 6  # mkdocs-jupyter's own default


def notebook_toc_tokens(fpath: str, toc_depth: int) -> tuple[list[Any], str | None]:
    """Return (table-of-contents tokens, the first level-1 title) of the notebook at ``fpath``."""
    nb = nbformat.read(fpath, as_version=4)
    body = "\n\n".join(cell.source for cell in nb.cells if cell.cell_type == "markdown")
    md = markdown.Markdown(extensions=[TocExtension(toc_depth=toc_depth)])
    md.convert(body)
    tokens: list[Any] = md.toc_tokens  # set by the toc extension
    title = next((token["name"] for token in tokens if token["level"] == 1), None)
    return tokens, title


def on_page_content(html: str, page: Any, config: Any, files: Any) -> str:
    """mkdocs hook: a notebook page's table of contents and title from its Markdown cells."""
    if not page.file.src_uri.endswith(".ipynb"):
        return html
    plugin = config.plugins.get("mkdocs-jupyter")
    options = plugin.config if plugin is not None else {}
    tokens, title = notebook_toc_tokens(page.file.abs_src_path, options.get("toc_depth", DEFAULT_TOC_DEPTH))
    page.toc = get_toc(tokens)
    if title is not None and not options.get("ignore_h1_titles", False):
        page.title = title
    return html
