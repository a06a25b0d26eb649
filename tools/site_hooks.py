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

import html as html_entities
import re
from typing import Any
from urllib.parse import unquote

import markdown
import nbformat
from markdown.extensions.toc import TocExtension
from mkdocs.structure.toc import get_toc
from mkdocs_jupyter.utils import slugify

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


# A link to a notebook section is written in JupyterLab's anchor form, the heading's text with
# spaces turned into `-` (`08_....ipynb#4.-Persistent-workers-and-stale-dataset-state`), so it
# lands in JupyterLab (tools/links.py, tests/test_links.py). mkdocs-jupyter gives a notebook's
# headings slugified ids instead (`4-persistent-workers-and-stale-dataset-state`:
# mkdocs_jupyter/convert.py, add_anchor_lower_id), the same slug Python-Markdown gives the
# headings of docs/*.md. Slugifying the JupyterLab anchor gives that id (spaces and hyphens both
# become one `-`, punctuation goes), so the site rewrites each such link as it builds a page.
NOTEBOOK_HREF = re.compile(r'href="(?P<path>[^"#]*)(?:#(?P<anchor>[^"]*))?"')
NOTEBOOK_PAGE = re.compile(r"(?:^|/)\d\d_\w+\.(?:ipynb|html)$")


def site_anchor(anchor: str) -> str:
    """The id the site gives the heading a JupyterLab-form ``anchor`` names (as written in a
    page's HTML: entities like `&quot;` and %-escapes undone first)."""
    return slugify(unquote(html_entities.unescape(anchor)))


def on_page_content(html: str, page: Any, config: Any, files: Any) -> str:
    """mkdocs hook: a notebook page's table of contents and title from its Markdown cells; then
    links to notebook sections (JupyterLab anchors) rewritten into the site's heading ids, and a
    notebook's links to other notebooks (`NN_name.ipynb`) into their pages (`NN_name.html`)."""
    if page.file.src_uri.endswith(".ipynb"):
        plugin = config.plugins.get("mkdocs-jupyter")
        options = plugin.config if plugin is not None else {}
        depth = options.get("toc_depth", DEFAULT_TOC_DEPTH)
        tokens, title = notebook_toc_tokens(page.file.abs_src_path, depth)
        page.toc = get_toc(tokens)
        if title is not None and not options.get("ignore_h1_titles", False):
            page.title = title
    return rewrite_links(html, page)


def rewrite_links(content: str, page: Any) -> str:
    """``content`` with notebook-section links rewritten for the site (see NOTEBOOK_HREF)."""
    on_notebook = page.file.src_path.endswith(".ipynb")

    def rewrite(match: re.Match) -> str:
        path, anchor = match["path"], match["anchor"]
        if on_notebook and path.endswith(".md") and "://" not in path:  # a page of docs/, as built
            return f'href="{path[:-3]}.html#{anchor}"' if anchor else f'href="{path[:-3]}.html"'

        to_notebook = bool(NOTEBOOK_PAGE.search(path)) and "://" not in path
        if not to_notebook and not (on_notebook and not path):
            return match.group(0)
        if to_notebook and on_notebook and path.endswith(".ipynb"):
            path = path[: -len(".ipynb")] + ".html"
        return f'href="{path}#{site_anchor(anchor)}"' if anchor else f'href="{path}"'

    return NOTEBOOK_HREF.sub(rewrite, content)
