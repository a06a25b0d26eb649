"""Profile a training loop: the DataLoader in torch.profiler, and a trace file (notebook 14).

Open the trace in https://ui.perfetto.dev or chrome://tracing (notebook 14, section 2).

torch records every next() on a DataLoader iterator as an event called
enumerate(DataLoader)#<iterator class>.__next__ (torch/utils/data/dataloader.py,
_BaseDataLoaderIter.__init__, _profile_name). The profiler sees this process only: long
"data" ranges are the symptom; the workers hold the cause (dump their stacks: notebook 14,
section 3).
"""

from torch.profiler import ProfilerActivity, profile, record_function


def profile_steps(loader, train_step, trace_path="trace.json", steps=8):
    """Profile `steps` training steps (the loader must have that many batches): print the summary
    table, write a trace file and return the profile."""
    with profile(activities=[ProfilerActivity.CPU]) as prof:  # on a GPU add ProfilerActivity.CUDA
        batches = iter(loader)
        for _ in range(steps):
            with record_function("data"):  # holds torch's enumerate(DataLoader)#...__next__ event
                batch = next(batches)
            with record_function("step"):
                train_step(batch)
    del batches  # stops the workers
    print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=8))
    prof.export_chrome_trace(str(trace_path))
    return prof
