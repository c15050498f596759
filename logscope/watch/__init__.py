"""``logscope watch``: a running job's files followed as they grow, the rank that stalled named
while the job runs, before any timeout fires (see the README, "Watching a running job").

* :mod:`.follow` reads what each file gained since the last look, each byte once;
* :mod:`.state` keeps the job's picture in bounded memory and says what there is to say (stall,
  error, recovered), with the rule :mod:`logscope.detectors.behind` shares with ``analyze``;
* :mod:`.events` is the ``--format jsonl`` contract; :mod:`.view` the live terminal view;
* :mod:`.run` is the loop, and the verdict when the job ends.
"""
