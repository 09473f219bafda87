"""Fixtures of the distrib tests."""

from __future__ import annotations

import pytest

import distrib as dist
from tests.distrib._harness import free_port


@pytest.fixture
def world_of_one():
    """A process group of this process alone (zmq on loopback), destroyed afterwards."""
    dist.init_process_group("zmq", init_method=f"tcp://127.0.0.1:{free_port()}", rank=0, world_size=1)
    yield
    dist.destroy_process_group()
