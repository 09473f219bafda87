"""``launch``: start and supervise the processes of a distributed job. Our ``torchrun``.

The top layer: it may use ``distrib``, ``nn``, ``autograd`` and ``tensor``; nothing
imports it. The command-line entry point is ``distrib-launch`` (``python -m launch``),
which is not implemented yet.
"""
