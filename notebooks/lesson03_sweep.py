"""Written by notebook 03 (03_workers_and_prefetch.ipynb), section 2: what the CPU sweep measured."""

MAX_K = 8  # the sweep starts at most MAX_K + 1 workers: memory stays bounded on big machines
QUIET = 0.3  # cores other programs may use during the sweep before it measured them, not us


def idle_k(idle: float) -> int:
    """Whole idle cores, at least 1 and at most MAX_K: where decoding should stop gaining."""
    return max(1, min(MAX_K, round(idle)))


def scaling_not_measured(k: int, idle: float, others: float) -> str | None:
    """Why "k workers vs 1 on k idle cores" was not measured, or None if it was. ``idle``: idle
    cores before the sweep; ``others``: the most cores other programs used during any count."""
    if idle < k - QUIET or others >= QUIET:
        return f"other programs used the cores ({idle:.1f} idle before the sweep, {others:.1f} busy in it)"
    if k < 2:
        return "one idle core: no second core to decode in parallel"
    return None


def stop_not_measured(k: int, idle: float, others: float, usable: int) -> str | None:
    """Why "one worker past k stops helping" was not measured, or None if it was: it needs every
    one of the ``usable`` cores busy with our k workers, none left idle for worker k + 1."""
    if idle < k - QUIET or others >= QUIET:
        return f"other programs used the cores ({idle:.1f} idle before the sweep, {others:.1f} busy in it)"
    if k < usable:
        return f"{usable} cores and {k} + 1 workers at most: worker {k + 1} may still find an idle core"
    return None


def latency_not_measured(others: float, usable: int) -> str | None:
    """Why "8 waiting workers ≥ 4× one" was not measured, or None if it was: waiting needs no core,
    but delivering batches needs some; with over half the cores busy elsewhere, batches wait for CPU."""
    if others >= usable / 2:
        return f"other programs kept {others:.1f} of {usable} cores busy: batches waited for CPU, not reads"
    return None
