"""``tensor.profiler``: where the time and memory of a program go (as ``torch.profiler``).

>>> from tensor.profiler import profile, record_function, ProfilerActivity
>>> with profile(activities=[ProfilerActivity.CPU]) as prof:
...     with record_function("work"):
...         _ = tensor.ones(4) * 2
>>> print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=5))  # doctest: +SKIP

Higher layers (optimizers, collectives, the DataLoader, DDP) record through ``_recorder``;
see Note [Profiler hooks] there for what profiling costs when it is off.
"""

from ._profile import profile, record_function
from ._schedule import ProfilerAction, ProfilerActivity, schedule, tensorboard_trace_handler

__all__ = ["profile", "record_function", "schedule", "tensorboard_trace_handler", "ProfilerActivity", "ProfilerAction"]
