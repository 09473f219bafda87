"""DataLoader worker failures: re-raised exceptions, killed and exiting workers, timeouts, parent death,
early exits and interpreter exit. Each is detected within seconds and leaves no process or segment."""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from distrib.data import DataLoader, Dataset, _pool
from tests.distrib._data_procs import alive, children, mapped_buffers, shm_names
from tests.helpers import wait_until

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class CustomError(Exception):
    def __init__(self, code, detail):
        super().__init__(code, detail)


class Failing(Dataset):
    """Sample 5 fails in the way ``how`` says; the others are their index."""

    def __init__(self, how):
        self.how = how

    def __len__(self):
        return 12

    def __getitem__(self, i):
        if i == 5:
            if self.how == "ValueError":
                raise ValueError("bad sample 5")
            if self.how == "KeyError":
                raise KeyError("missing")
            if self.how == "CustomError":
                raise CustomError(7, "two arguments")
            if self.how == "exit":
                os._exit(3)
            if self.how == "hang":
                threading.Event().wait(60)
            os.kill(os.getpid(), getattr(signal, self.how))
        return i


@pytest.fixture(autouse=True)
def _no_leftovers(monkeypatch):
    monkeypatch.setattr(_pool, "SHUTDOWN_GRACE", 0.5)
    before_children, before_shm = children(), shm_names()
    yield
    gc.collect()  # an iterator caught in a traceback's reference cycle stops its workers when collected
    assert wait_until(lambda: children() <= before_children, timeout=10), "a worker process was left behind"
    # Other processes' semaphores appear in /dev/shm for an instant (Python unlinks them at
    # once), so only a name that stays counts as left behind.
    assert wait_until(lambda: shm_names() <= before_shm, timeout=5), "a /dev/shm segment was left behind"
    assert mapped_buffers() == 0, "a batch buffer is still mapped"


@pytest.mark.parametrize(("how", "error", "raised_as"), [
    ("ValueError", ValueError, ValueError),
    ("KeyError", KeyError, KeyError),
    ("CustomError", CustomError, RuntimeError),  # its constructor does not take one message: as PyTorch
])
def test_worker_exception_is_reraised_with_worker_id_and_traceback(how, error, raised_as):
    loader = DataLoader(Failing(how), batch_size=2, num_workers=2)
    it = iter(loader)
    assert next(it).tolist() == [0, 1]
    assert next(it).tolist() == [2, 3]
    with pytest.raises(raised_as) as info:
        next(it)
    message = str(info.value.args[0])
    assert message.startswith(f"Caught {error.__name__} in DataLoader worker process 0.\n"
                              "Original Traceback (most recent call last):\n")
    assert "in __getitem__" in message
    assert "bad sample 5" in message or how != "ValueError"
    assert next(it).tolist() == [6, 7]  # the loader goes on, as PyTorch's does
    del it


def test_key_error_message_stays_readable():
    with pytest.raises(KeyError) as info:
        list(DataLoader(Failing("KeyError"), batch_size=2, num_workers=1))
    assert str(info.value).startswith("Caught KeyError")  # not the repr of a string


def test_worker_init_fn_error_is_raised_on_first_fetch():
    def broken_init(worker_id):
        raise ZeroDivisionError(f"init of {worker_id}")

    it = iter(DataLoader(list(range(4)), batch_size=2, num_workers=1, worker_init_fn=broken_init))
    with pytest.raises(ZeroDivisionError, match="Caught ZeroDivisionError in DataLoader worker process 0"):
        next(it)
    del it


@pytest.mark.parametrize(("how", "message"), [
    ("SIGKILL", r"DataLoader worker \(pid \d+\) is killed by signal: Killed\."),
    ("SIGSEGV", r"DataLoader worker \(pid \d+\) is killed by signal: Segmentation fault\."),
    ("SIGBUS", r"is killed by signal: Bus error\. It is possible that dataloader's workers are out of shared "
               r"memory\. Please try to raise your shared memory limit\."),
    ("exit", r"DataLoader worker \(pid \d+\) exited unexpectedly with exit code 3\. Details are lost due to "
             r"multiprocessing"),
])
def test_dead_worker_is_reported_at_once(how, message):
    start = time.monotonic()
    it = iter(DataLoader(Failing(how), batch_size=2, num_workers=2))
    with pytest.raises(RuntimeError, match=message):
        for _ in it:
            pass
    assert time.monotonic() - start < 10
    assert not any(alive(pid) for pid in it.worker_pids)  # the whole pool is stopped
    del it


def test_timeout_names_the_seconds_and_stops_the_hung_worker():
    it = iter(DataLoader(Failing("hang"), batch_size=2, num_workers=1, timeout=0.3))
    assert next(it).tolist() == [0, 1]
    assert next(it).tolist() == [2, 3]
    with pytest.raises(RuntimeError, match=r"^DataLoader timed out after 0.3 seconds$"):
        next(it)
    pids = it.worker_pids
    del it
    assert not any(alive(pid) for pid in pids)


@pytest.mark.parametrize("how", ["break", "del"])
def test_leaving_early_shuts_the_workers_down(how):
    loader = DataLoader(list(range(100)), batch_size=2, num_workers=2)
    if how == "break":
        for batch in loader:
            pids = list(loader_pids(batch))
            break
        del batch
    else:
        it = iter(loader)
        next(it)
        pids = it.worker_pids
        del it
    assert pids and not any(alive(pid) for pid in pids)


def loader_pids(_batch):
    """The pids of the DataLoader workers that are children of this process right now."""
    return children()


def _run_script(body: str, timeout: float = 60):
    script = textwrap.dedent("""
        import os, sys, threading
        sys.path.insert(0, {root!r})
        from distrib.data import DataLoader, Dataset

        class Hang(Dataset):
            def __len__(self):
                return 100
            def __getitem__(self, i):
                if i >= 4:
                    threading.Event().wait(120)
                return i
    """).format(root=ROOT) + textwrap.dedent(body)
    return subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def test_workers_die_with_their_parent():
    proc = _run_script("""
        it = iter(DataLoader(Hang(), batch_size=2, num_workers=2))
        next(it)
        print(*it.worker_pids, flush=True)
        threading.Event().wait(120)
    """)
    try:
        pids = [int(p) for p in proc.stdout.readline().split()]
        assert len(pids) == 2 and all(alive(p) for p in pids)
        proc.kill()
        proc.wait(timeout=30)
        assert wait_until(lambda: not any(alive(p) for p in pids), timeout=10), "workers outlived their parent"
    finally:
        proc.kill()
        proc.wait(timeout=30)
        proc.stdout.close()
        proc.stderr.close()


def test_interpreter_exit_with_a_live_iterator_does_not_hang():
    proc = _run_script("""
        keep = iter(DataLoader(Hang(), batch_size=2, num_workers=2, persistent_workers=True))
        next(keep)
        print(*keep.worker_pids, flush=True)
        sys.exit(0)
    """)
    try:
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    pids = [int(p) for p in out.split()]
    assert len(pids) == 2
    assert wait_until(lambda: not any(alive(p) for p in pids), timeout=10)
