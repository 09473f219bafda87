"""What the compiled modules read from Cython's ``cython`` module, for plain Python without
Cython installed (Note [Compiled dispatch and graph] in tensor/_accelerator.py)."""

compiled = False
