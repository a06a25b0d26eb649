"""Workers started by forkserver, from a server that imported torch once.

Under forkserver (Python 3.14's default on Linux) each worker is forked from a small server
process, not from your program. By default the server preloads only your script's main
module, and before Python 3.14 not even that (CPython gh-126631); in a notebook there is no
script: every worker imports torch itself, every epoch, about as slow as spawn.
set_forkserver_preload makes the server import the listed modules once, when it starts; set it
before the first loader starts the server. The Dataset still travels pickled. Notebook 12,
section 4.
"""

import multiprocessing

from torch.utils.data import DataLoader


def forkserver_loader(dataset, preload=("torch",), **loader_kwargs):
    """A DataLoader whose workers fork from a server that imported `preload` once."""
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(list(preload))  # read when the server starts: before the first loader's iter()
    return DataLoader(dataset, multiprocessing_context=ctx, **loader_kwargs)


# Or keep the workers for the whole run: DataLoader(..., persistent_workers=True) starts them
# once, in the first epoch, whatever the start method.
