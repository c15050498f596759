"""PyTorch's Flight Recorder dumps joined to a job's logs.

PyTorch keeps, in every process, a ring buffer of the last collectives of each process group (the
Flight Recorder, on by default in current releases with 2000 entries) and writes it to a file when
a collective times out or fails. logscope finds those files (:mod:`.finding`), reads them without
ever running code from them (:mod:`.safe_load`, :mod:`.dump`, :mod:`.reading`), puts their
entries on the job's timeline as events of source ``fr``, aligned to the logs' clock
(:mod:`.rows`), and works out once, for every output, which ranks lag, which disagree and which
arrive late (:mod:`logscope.detectors.fr_facts`); the detectors ``fr_*`` turn that into findings.

This package imports nothing heavy at its top: the readers run in worker processes that load
neither polars nor torch (torch is never imported by logscope).
"""
