"""Rendezvous helpers that read the launcher's, MPI's or SLURM's environment."""

from __future__ import annotations

import pytest

from distrib import rendezvous


@pytest.mark.parametrize(("env", "expected"), [
    ({}, None), ({"LOCAL_WORLD_SIZE": "4"}, 4), ({"OMPI_COMM_WORLD_LOCAL_SIZE": "3"}, 3),
    ({"SLURM_NTASKS_PER_NODE": "2(x3)"}, 2), ({"LOCAL_WORLD_SIZE": "many"}, None),
])
def test_local_world_size_from_launchers(monkeypatch, env, expected):
    for name in rendezvous._LOCAL_SIZE_VARS:
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert rendezvous.local_world_size() == expected
