"""mkdocs hooks for the course's static site (`make html`, tools/build_site.py).

mkdocs-jupyter builds a notebook's table of contents from its Markdown export, which drops the
code spans of a heading: "5. `shuffle=True` is a `RandomSampler`" became "5. is a", linked to an
anchor that does not exist. The table of contents is built here from the notebook's own
Markdown cells instead, so its titles are whole and its anchors are the headings' ids.
"""

from __future__ import annotations

import html
import re
from urllib.parse import unquote

import mkdocs_jupyter.plugin as jupyter_plugin
import nbformat
from mkdocs_jupyter.utils import slugify


def notebook_toc_tokens(fpath: str, toc_depth: int) -> tuple[list[dict], str | None]:
    """Return (table-of-contents tokens, the first level-1 title) of the notebook at ``fpath``."""
    nb = nbformat.read(fpath, as_version=4)
    body = "\n\n".join(cell.source for cell in nb.cells if cell.cell_type == "markdown")
    tokens = jupyter_plugin._get_markdown_toc(body, toc_depth)
    title = next((token["name"] for token in tokens if token["level"] == 1), None)
    return tokens, title


jupyter_plugin._get_nb_toc_tokens = notebook_toc_tokens


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
    return slugify(unquote(html.unescape(anchor)))


def on_page_content(content: str, page, config, files) -> str:
    """Rewrite links to notebook sections (JupyterLab anchors) into the site's heading ids, and a
    notebook's links to other notebooks (`NN_name.ipynb`, left as written by mkdocs-jupyter) into
    their pages (`NN_name.html`)."""
    on_notebook = page.file.src_path.endswith(".ipynb")

    def rewrite(match: re.Match) -> str:
        path, anchor = match["path"], match["anchor"]
        to_notebook = bool(NOTEBOOK_PAGE.search(path)) and "://" not in path
        if not to_notebook and not (on_notebook and not path):
            return match.group(0)
        if to_notebook and on_notebook and path.endswith(".ipynb"):
            path = path[: -len(".ipynb")] + ".html"
        return f'href="{path}#{site_anchor(anchor)}"' if anchor else f'href="{path}"'

    return NOTEBOOK_HREF.sub(rewrite, content)
