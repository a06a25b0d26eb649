"""mkdocs hooks for the course's static site (`make html`, tools/build_site.py).

mkdocs-jupyter builds a notebook's table of contents from its Markdown export, which drops the
code spans of a heading: "5. `shuffle=True` is a `RandomSampler`" became "5. is a", linked to an
anchor that does not exist. The table of contents is built here from the notebook's own
Markdown cells instead, so its titles are whole and its anchors are the headings' ids.
"""

from __future__ import annotations

import mkdocs_jupyter.plugin as jupyter_plugin
import nbformat


def notebook_toc_tokens(fpath: str, toc_depth: int) -> tuple[list[dict], str | None]:
    """Return (table-of-contents tokens, the first level-1 title) of the notebook at ``fpath``."""
    nb = nbformat.read(fpath, as_version=4)
    body = "\n\n".join(cell.source for cell in nb.cells if cell.cell_type == "markdown")
    tokens = jupyter_plugin._get_markdown_toc(body, toc_depth)
    title = next((token["name"] for token in tokens if token["level"] == 1), None)
    return tokens, title


jupyter_plugin._get_nb_toc_tokens = notebook_toc_tokens
