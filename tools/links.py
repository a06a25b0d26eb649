"""Resolve every link of the course where it is read; print the ones that do not resolve.

Usage: python tools/links.py        (exit status 1 when a link is broken)

Where each link is read decides its anchor form:
- a link to a notebook section (`NN_name.ipynb#anchor`, from a notebook, a stored output or a
  page of docs/) uses JupyterLab's form: the heading's text as rendered, spaces turned into
  `-`, punctuation and case kept (`#3.-torch's-own-warning,-and-what-extra-workers-cost`). The
  static site ids a notebook's headings by their slug instead (mkdocs_jupyter/convert.py,
  `add_anchor_lower_id`): tools/site_hooks.py rewrites each such link as the site is built;
- a link to a heading of docs/*.md or README.md uses the site's form: mkdocs renders those pages
  with Python-Markdown's `toc` extension (`markdown.extensions.toc.slugify`: accents dropped,
  punctuation dropped, lower case, runs of spaces and hyphens to one `-`), which is GitHub's form
  too for headings of plain words;
- a relative link without an anchor names a file or folder that exists.
The doctor's `see: notebooks/NN_name.ipynb#anchor` lines in stored outputs are links read from
the repository root. Web links (http, https, mailto) are not fetched.
"""

from __future__ import annotations

import difflib
import json
import re
import sys
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

try:  # imported as tools.links (python -m, the tests)
    from tools.course_files import notebooks_in
except ImportError:  # run as a script, `python tools/links.py`: its folder is on sys.path
    from course_files import notebooks_in  # type: ignore[no-redef]

ROOT = Path(__file__).resolve().parent.parent
INLINE_LINK = re.compile(r"\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
SEE_LINE = re.compile(r"see:\s+(\S+\.ipynb(?:#\S+)?)")
FENCE = re.compile(r"^\s*(```|~~~)")


def plain(markdown: str) -> str:
    """Return a heading's text as rendered: no code marks, emphasis, link syntax or HTML tags."""
    parts = re.split(r"(`[^`]*`)", markdown)  # code spans are kept as they are, marks dropped
    for i, part in enumerate(parts):
        if part.startswith("`") and part.endswith("`") and len(part) > 1:
            parts[i] = part.strip("`")
            continue
        part = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", part)  # [text](url) -> text
        part = re.sub(r"<[^>]+>", "", part)
        parts[i] = re.sub(r"\*{1,2}([^*]+)\*{1,2}", r"\1", part)  # **bold**, *emphasis*
    return "".join(parts).strip().rstrip("#").strip()


def notebook_anchor(heading: str) -> str:
    """JupyterLab's (and nbconvert's) anchor of a markdown heading: spaces to `-`, all else kept."""
    return plain(heading).replace(" ", "-")


def page_anchor(heading: str) -> str:
    """mkdocs' anchor of a heading in a Markdown page (Python-Markdown's toc `slugify`)."""
    text = unicodedata.normalize("NFKD", plain(heading)).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def markdown_lines(text: str) -> list[str]:
    """The lines of Markdown ``text`` outside fenced code blocks."""
    lines, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            lines.append(line)
    return lines


def headings(text: str) -> list[str]:
    """The ATX headings (`# ...` to `###### ...`) of Markdown ``text``, outside code fences."""
    return [m.group(1) for line in markdown_lines(text) if (m := re.match(r"^#{1,6}\s+(.*)", line))]


def notebook_cells(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def notebook_markdown(path: Path) -> str:
    return "\n\n".join("".join(c["source"]) for c in notebook_cells(path) if c["cell_type"] == "markdown")


def output_text(cell: dict) -> str:
    """Everything a code cell printed (streams and plain-text results), as stored."""
    parts = []
    for out in cell.get("outputs", []):
        text = out.get("text") or out.get("data", {}).get("text/plain", "")
        parts.append("".join(text) if isinstance(text, list) else text)
    return "".join(parts)


def anchors_of(path: Path) -> list[str]:
    """The anchors a link to ``path`` may name, in the form of the place that renders it."""
    if path.suffix == ".ipynb":
        return [notebook_anchor(h) for h in headings(notebook_markdown(path))]
    found: list[str] = []
    for heading in headings(path.read_text(encoding="utf-8")):
        slug = page_anchor(heading)
        n, unique = 0, slug
        while unique in found:  # mkdocs' toc numbers repeated headings: slug, slug_1, ...
            n += 1
            unique = f"{slug}_{n}"
        found.append(unique)
    return found


@dataclass
class Link:
    source: str  # the file that holds it, relative to the root (and where: a cell, an output)
    target: str  # as written
    base: Path  # the folder a relative target starts from
    holder: Path  # the file that holds it (the target of a bare `#anchor`)

    def problem(self) -> str | None:
        """Why this link does not resolve, with the nearest thing that exists; None if it does."""
        if re.match(r"^[a-z][a-z0-9+.-]*:", self.target):  # http:, https:, mailto:
            return None
        path_part, _, anchor = self.target.partition("#")
        anchor = unquote(anchor)
        path = (self.base / unquote(path_part)).resolve() if path_part else self.holder
        if not path.exists():
            siblings = [p.name for p in path.parent.glob("*")] if path.parent.exists() else []
            near = difflib.get_close_matches(path.name, siblings, n=1, cutoff=0.3)
            return f"no file {path_part!r}" + (f" (closest: {near[0]})" if near else "")
        if not anchor or path.is_dir() or path.suffix not in (".ipynb", ".md"):
            return None
        found = anchors_of(path)
        if anchor in found:
            return None
        near = difflib.get_close_matches(anchor, found, n=1, cutoff=0.0)
        form = "JupyterLab" if path.suffix == ".ipynb" else "site"
        return f"no heading #{anchor} in {path.name} ({form} form)" + (
            f"; closest: #{near[0]}" if near else ""
        )


def links_in_markdown(text: str, source: str, holder: Path) -> list[Link]:
    found = []
    for line in markdown_lines(text):
        line = re.sub(r"``[^`]*``|`[^`]*`", "", line)  # a link inside a code span is not a link
        found += [Link(source, m.group(1), holder.parent, holder) for m in INLINE_LINK.finditer(line)]
    return found


def course_links(root: Path = ROOT) -> list[Link]:
    """Every link of the course: notebook markdown, stored outputs, docs/*.md, README.md."""
    found: list[Link] = []
    for nb in notebooks_in("notebooks", root):
        name = nb.relative_to(root).as_posix()
        for i, cell in enumerate(notebook_cells(nb)):
            if cell["cell_type"] == "markdown":
                found += links_in_markdown("".join(cell["source"]), f"{name} cell {i}", nb)
            elif cell["cell_type"] == "code":
                for m in SEE_LINE.finditer(output_text(cell)):  # the doctor's see: lines
                    found.append(Link(f"{name} cell {i} output", m.group(1), root, nb))
    for page in [root / "README.md", *sorted((root / "docs").glob("*.md"))]:
        found += links_in_markdown(page.read_text(encoding="utf-8"), page.relative_to(root).as_posix(), page)
    return found


def broken(root: Path = ROOT) -> list[str]:
    """One line per link that does not resolve: where it is, the link, why, the closest heading."""
    return [f"{link.source}: ({link.target}) {why}" for link in course_links(root) if (why := link.problem())]


def main(argv: list[str] | None = None) -> int:
    import argparse

    argparse.ArgumentParser(
        prog="python tools/links.py",
        description="Resolve every link of the course where it is read; print the broken ones (exit 1).",
    ).parse_args(argv)
    lines = broken()
    print("\n".join(lines) if lines else "every link resolves")
    return 1 if lines else 0


if __name__ == "__main__":
    sys.exit(main())
