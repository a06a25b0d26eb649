"""Written by notebook 07, section 5: one epoch of each loader, for a fresh Python to run."""


def one_epoch_each(loaders: dict) -> dict:
    """Per name: the batches of one epoch, or the error that ended it ("Type: message")."""
    report = {}
    for name, loader in loaders.items():
        batches = []
        try:
            for batch in loader:
                batches.append(batch)
            report[name] = {"batches": batches, "error": None}
        except Exception as error:  # keep only text: the traceback would hold the workers
            report[name] = {"batches": batches, "error": f"{type(error).__name__}: {error}"}
    return report
