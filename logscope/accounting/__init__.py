"""SLURM's own record of a job beside its logs: ``logscope analyze JOBID``.

One concern per module:

* :mod:`.record` the model every reader produces (:class:`AccountingRecord`, :class:`StepRecord`);
* :mod:`.sacct_json`, :mod:`.sacct_parsable`, :mod:`.scontrol` the readers of ``sacct --json``
  (22.05's and 23.02+'s shapes), ``sacct -P``/``-B`` and ``scontrol show job`` (plain, ``--json``);
  :mod:`.values` the value shapes they share; :mod:`.hostlist` node lists;
* :mod:`.states` what each state means (``logscope/knowledge/slurm_states.toml``);
* :mod:`.jobid` job ids as typed (``12345``, ``12345_7``, ``12345.2``);
* :mod:`.query` the live commands; :mod:`.saved` their outputs saved beside the logs;
* :mod:`.stdio_patterns` ``--output`` patterns as name rules; :mod:`.confine` the files they name
  that are the job's; :mod:`.gather` record + logs;
* :mod:`.rows` the record as timeline rows; :mod:`.bundle` ``--save DIR``.
"""
