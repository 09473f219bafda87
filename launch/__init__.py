"""``launch``: start and supervise the processes of a distributed job. Our ``torchrun``.

The top layer: it may use ``distrib``, ``nn``, ``autograd`` and ``tensor``, and nothing
imports it. Yet the launcher itself imports none of them (nor numpy): start-up speed is a
feature. The command line is ``distrib-launch`` (``python -m launch``).

- ``cli``: the flags (torchrun's), parsed into a launch spec;
- ``agent``: the local worker group: start, watch, stop, restart, the failure summary;
- ``procs``: parent-death signals and process-tree kills;
- ``output``: ``[rankN]:`` prefixes, log files, readable progress bars;
- ``errors``: worker-side error files (``launch.errors.record``) and the summary format;
- ``coordinator``: how the launchers of a multi-node job meet and agree (the workers' own
  rendezvous is ``distrib.rendezvous``); ``node``: one launcher's side of it; ``channel``:
  the authenticated wire between them, with heartbeats.
"""
