"""What the messages of the software that writes training-job logs mean, as reviewable data.

:mod:`logscope.knowledge.catalogue` loads ``messages.toml``: one entry per upstream message (NCCL,
PyTorch c10d and torch.distributed.elastic, DeepSpeed, SLURM, the NVIDIA driver, the kernel, the
C/C++/Python runtimes), each with the file it is printed from upstream, its format string, a real-
shaped example line, the event logscope records for it, its severity and category, and whom it
blames. Entries with a ``match`` regex are recognised from the catalogue itself; the others name the
event a pattern of :mod:`logscope.parsers.patterns` records, and ``tests/test_catalogue.py`` checks
that every example is recognised as its entry says.
"""

from logscope.knowledge.catalogue import CATALOGUE, Message, by_id, catalogue_patterns

__all__ = ["CATALOGUE", "Message", "by_id", "catalogue_patterns"]
