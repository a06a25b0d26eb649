"""Editing notebook 04's Dataset code and re-running the cells after it takes effect without a
kernel restart, under fork and under spawn (README, "Show the code"; issue #13's done-when).

A `loaderlab` kernel runs 04's own cells in a copy of notebooks/ (the committed lesson04_image_files.py is
never touched): the setup cell (`%autoreload 2`), the cell that writes the image folder, the
`%%writefile lesson04_image_files.py` cell and the import cell after it. A loader with 2 workers built from
the notebook's `ImageFiles` and `ResizeToTensor` reads a batch. Then the `%%writefile` cell's
text is edited (pixels scaled by 0 instead of 1/255, images resized to half the size), the cell
and the import are re-run, and a new loader's batch must show both edits: the workers run the
edited code, whether they are forked from the kernel or spawned and import lesson04_image_files.py afresh.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import nbformat
import pytest
from course_code import ROOT
from jupyter_client.manager import start_new_kernel

NOTEBOOK = ROOT / "notebooks" / "04_custom_dataset_and_caching.ipynb"
READ_A_BATCH = """
loader = DataLoader(ImageFiles(paths, mode="RGB", transform=ResizeToTensor(32)), batch_size=4,
                    num_workers=2)
xb, _ = next(iter(loader))
print("BATCH", tuple(xb.shape), float(xb.sum()), loaderlab.start_method())
"""
EDITS = {".float() / 255": ".float() * 0", "(self.size, self.size)": "(self.size // 2, self.size // 2)"}


def cells_up_to_the_import(path: Path) -> tuple[list[str], int]:
    """04's code cells from the setup cell to the cell importing lesson04_image_files, and the index (in that
    list) of the cell that writes lesson04_image_files.py."""
    sources = [c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
    write = next(i for i, s in enumerate(sources) if s.startswith("%%writefile lesson04_image_files.py\n"))
    load = next(
        i for i, s in enumerate(sources) if i > write and s.startswith("from lesson04_image_files import")
    )
    return sources[: load + 1], write


def run(client, code: str) -> str:
    """Execute code in the kernel; return its printed text, or fail with the kernel's traceback."""
    printed: list[str] = []

    def keep(msg):
        if msg["msg_type"] == "stream":
            printed.append(msg["content"]["text"])
        elif msg["msg_type"] == "error":
            printed.append("\n".join(msg["content"]["traceback"]))

    reply = client.execute_interactive(code, timeout=120, output_hook=keep)
    assert reply["content"]["status"] == "ok", f"cell failed:\n{code}\n{''.join(printed)[-3000:]}"
    return "".join(printed)


def batch_line(text: str) -> list[str]:
    return next(line for line in text.splitlines() if line.startswith("BATCH")).split()


# under spawn a release check (make test-spawn): 20 s of spawned workers
@pytest.mark.course
@pytest.mark.parametrize("method", ["fork", pytest.param("spawn", marks=pytest.mark.spawn)])
def test_editing_the_dataset_cell_changes_the_next_batch_without_a_restart(
    method, tmp_path, no_leaked_workers
):
    cells, write = cells_up_to_the_import(NOTEBOOK)
    folder = tmp_path / "notebooks"
    shutil.copytree(ROOT / "notebooks", folder, ignore=shutil.ignore_patterns("*.ipynb", "__pycache__"))
    env = {**os.environ, "LOADERLAB_START_METHOD": method, "LOADERLAB_TEST_MODE": "1"}
    manager, client = start_new_kernel(kernel_name="loaderlab", cwd=str(folder), env=env)
    try:
        for source in cells:
            run(client, source)
        before = batch_line(run(client, READ_A_BATCH))

        edited = cells[write]
        for old, new in EDITS.items():
            assert old in edited, (
                f"04's %%writefile lesson04_image_files.py cell no longer contains {old!r}: update EDITS"
            )
            edited = edited.replace(old, new)
        run(client, edited)
        run(client, cells[write + 1])
        after = batch_line(run(client, READ_A_BATCH))
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)

    assert before[-1] == after[-1] == method
    assert before[1:5] == ["(4,", "3,", "32,", "32)"] and float(before[5]) > 0, before
    assert after[1:5] == ["(4,", "3,", "16,", "16)"] and float(after[5]) == 0.0, after
    module = "lesson04_image_files.py"
    assert (ROOT / "notebooks" / module).read_text() != (folder / module).read_text()
