"""What the messages of the software that writes training-job logs mean, as reviewable data.

:mod:`logscope.knowledge.catalogue` loads ``messages.toml``, the one table of what a log line means:
one entry per upstream message (NCCL, PyTorch c10d and torch.distributed.elastic, DeepSpeed, SLURM,
the NVIDIA driver, the kernel, the C/C++/Python runtimes, the trainers), each with the file it is
printed from upstream, its format string, a real-shaped example line, the event logscope records for
it, its severity and category, whom it blames, and how a line holding it is recognised (a trigger and
a regex found anywhere in the line, tried in the file's order: :data:`RECOGNISERS`).
``tests/test_catalogue.py`` checks that every example is recognised as its entry says.
"""

from logscope.knowledge.catalogue import CATALOGUE, RECOGNISERS, Message, by_id

__all__ = ["CATALOGUE", "RECOGNISERS", "Message", "by_id"]
