"""One node: the workers' environment, exit codes, the failure summary, restarts and logs."""

from __future__ import annotations

import json
import os
import re

import pytest

from .conftest import clean_env, run_launch, write_script

ENV_SCRIPT = """\
import os, sys
names = sys.argv[1:]
print(" ".join(f"{n}={os.environ.get(n, '<unset>')}" for n in names))
"""


def worker_env(result, rank: int) -> dict:
    """The NAME=value pairs one rank printed."""
    line = next(line for line in result.stdout.splitlines() if line.startswith(f"[rank{rank}]:"))
    return dict(pair.split("=", 1) for pair in line.split(":", 1)[1].split())


def test_worker_environment(tmp_path):
    script = write_script(tmp_path, "env.py", ENV_SCRIPT)
    names = ["RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "GROUP_WORLD_SIZE", "ROLE_RANK",
             "MASTER_ADDR", "MASTER_PORT", "DISTRIB_RESTART_COUNT", "TORCHELASTIC_RESTART_COUNT", "OMP_NUM_THREADS"]
    result = run_launch("--nproc", "3", "--master-port", "23456", script, *names)
    assert result.returncode == 0, result.stderr
    for rank in range(3):
        env = worker_env(result, rank)
        assert env == {"RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": "3", "LOCAL_WORLD_SIZE": "3",
                       "GROUP_RANK": "0", "GROUP_WORLD_SIZE": "1", "ROLE_RANK": str(rank),
                       "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "23456", "DISTRIB_RESTART_COUNT": "0",
                       "TORCHELASTIC_RESTART_COUNT": "0", "OMP_NUM_THREADS": "1"}
    assert "setting OMP_NUM_THREADS=1 for each of the 3 workers" in result.stderr


def test_job_ids_and_keys_are_shared_by_workers_and_fresh_per_job(tmp_path):
    script = write_script(tmp_path, "env.py", ENV_SCRIPT)
    names = ["DISTRIB_RUN_ID", "DISTRIB_AUTH_KEY", "DISTRIB_ERROR_FILE"]
    first, second = (run_launch("--nproc", "2", script, *names) for _ in range(2))
    a0, a1, b0 = worker_env(first, 0), worker_env(first, 1), worker_env(second, 0)
    assert a0["DISTRIB_RUN_ID"] == a1["DISTRIB_RUN_ID"] != b0["DISTRIB_RUN_ID"]
    assert a0["DISTRIB_AUTH_KEY"] == a1["DISTRIB_AUTH_KEY"] != b0["DISTRIB_AUTH_KEY"]
    assert re.fullmatch(r"[0-9a-f]{64}", a0["DISTRIB_AUTH_KEY"])
    assert a0["DISTRIB_ERROR_FILE"] != a1["DISTRIB_ERROR_FILE"]
    assert a0["DISTRIB_ERROR_FILE"].endswith("error.json")


def test_existing_auth_key_and_omp_threads_are_kept(tmp_path):
    script = write_script(tmp_path, "env.py", ENV_SCRIPT)
    result = run_launch("--nproc", "2", script, "DISTRIB_AUTH_KEY", "OMP_NUM_THREADS",
                        env=clean_env(DISTRIB_AUTH_KEY="mine", OMP_NUM_THREADS="2"))
    assert worker_env(result, 1) == {"DISTRIB_AUTH_KEY": "mine", "OMP_NUM_THREADS": "2"}
    assert "OMP_NUM_THREADS" not in result.stderr


def test_single_worker_gets_no_omp_setting(tmp_path):
    script = write_script(tmp_path, "env.py", ENV_SCRIPT)
    result = run_launch("--nproc", "1", script, "OMP_NUM_THREADS")
    assert worker_env(result, 0) == {"OMP_NUM_THREADS": "<unset>"}


EXITS = [  # (code run by rank 1 while rank 0 blocks, launcher exit code)
    ("sys.exit(0)", 0),
    ("sys.exit(3)", 3),
    ("raise ValueError('boom')", 1),
    ("os.kill(os.getpid(), signal.SIGSEGV)", 128 + 11),
    ("os.kill(os.getpid(), signal.SIGKILL)", 128 + 9),
    ("os._exit(77)", 77),
]


@pytest.mark.parametrize("code,expected", EXITS)
def test_exit_code_is_the_root_causes(tmp_path, code, expected):
    script = write_script(tmp_path, "fail.py", f"""\
        import os, signal, sys
        if os.environ["RANK"] == "1":
            {code}
        elif {expected} != 0:
            signal.pause()  # blocks until the launcher stops it
    """)
    result = run_launch("--nproc", "2", "--kill-timeout", "5", script)
    assert result.returncode == expected, result.stderr
    assert ("FAILED" in result.stderr) == (expected != 0)


def test_summary_names_the_root_cause_with_its_traceback_from_the_error_file(tmp_path):
    script = write_script(tmp_path, "rec.py", """\
        import os, signal
        from launch.errors import record

        @record
        def main():
            if os.environ["RANK"] == "1":
                raise KeyError("missing-shard-17")
            signal.pause()  # blocks until the launcher stops it

        main()
    """)
    result = run_launch("--nproc", "2", "--kill-timeout", "5", script)
    assert result.returncode == 1
    summary = result.stderr[result.stderr.index("FAILED"):]
    root = summary[summary.index("Root Cause"):summary.index("Other Failures")]
    assert re.search(r"rank       : 1 \(local_rank: 1\)", root)
    assert re.search(r"exitcode   : 1 \(pid: \d+\)", root)
    assert re.search(r"time       : \d{4}-\d\d-\d\d_\d\d:\d\d:\d\d", root)
    assert re.search(r"host       : \S+", root)
    assert "message    : KeyError: 'missing-shard-17'" in root
    assert re.search(r"error_file : /\S+/attempt_0/1/error.json", root)
    assert 'raise KeyError("missing-shard-17")' in root
    assert "<NO_OTHER_FAILURES>" in summary  # rank 0 was stopped by us: not a failure


def test_summary_falls_back_to_stderr_without_an_error_file(tmp_path):
    script = write_script(tmp_path, "plain.py", "def f():\n    1 / 0\nf()\n")
    result = run_launch("--nproc", "1", script)
    root = result.stderr[result.stderr.index("Root Cause"):]
    assert result.returncode == 1
    assert "error_file : <N/A>" in root
    assert "no error file: decorate the entry point with launch.errors.record" in root
    assert "ZeroDivisionError: division by zero" in root


def test_signal_death_is_named(tmp_path):
    script = write_script(tmp_path, "seg.py", "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n")
    result = run_launch("--nproc", "1", script)
    assert result.returncode == 139
    assert re.search(r"exitcode   : signal 11 \(SIGSEGV\), exit code 139 \(pid: \d+\)", result.stderr)


RESTART_SCRIPT = """\
import os, sys
count = int(os.environ["DISTRIB_RESTART_COUNT"])
print("attempt", count, "max", os.environ["DISTRIB_MAX_RESTARTS"])
if os.environ["RANK"] == "1" and count < int(sys.argv[1]):
    sys.exit(5)
"""


@pytest.mark.parametrize("failing_attempts,max_restarts,expected_code,attempts", [
    (1, 2, 0, 2),   # fails once, the restart succeeds
    (2, 2, 0, 3),
    (3, 2, 5, 3),   # restarts exhausted: the root cause's code
    (1, 0, 5, 1),
])
def test_restarts_rerun_the_group_with_the_count_incremented(tmp_path, failing_attempts, max_restarts,
                                                             expected_code, attempts):
    script = write_script(tmp_path, "restart.py", RESTART_SCRIPT)
    result = run_launch("--nproc", "2", "--max-restarts", max_restarts, script, failing_attempts)
    assert result.returncode == expected_code, result.stderr
    seen = re.findall(rf"\[rank1\]:attempt (\d+) max {max_restarts}", result.stdout)
    assert seen == [str(i) for i in range(attempts)]
    if expected_code == 0:  # rank 0 may be stopped before it prints in a failed attempt, not in the last one
        assert f"[rank0]:attempt {attempts - 1} max {max_restarts}" in result.stdout
    assert result.stderr.count("restarting the worker group") == attempts - 1


def test_log_dir_keeps_error_files_and_redirected_output(tmp_path):
    os.mkfifo(tmp_path / "printed")  # rank 1 fails only once rank 0 has printed (opening a FIFO blocks)
    script = write_script(tmp_path, "logs.py", f"""\
        import os, sys
        from launch.errors import record
        print("out of", os.environ["RANK"])
        print("err of", os.environ["RANK"], file=sys.stderr)
        open({str(tmp_path / "printed")!r}, "w" if os.environ["RANK"] == "0" else "r").close()
        @record
        def main():
            if os.environ["RANK"] == "1":
                raise RuntimeError("logged")
        main()
    """)
    logs = tmp_path / "logs"
    result = run_launch("--nproc", "2", "--log-dir", logs, "--run-id", "job1", "--redirects", "1", "--tee", "0:2",
                        script)
    assert result.returncode == 1
    attempt = logs / "job1" / "attempt_0"
    assert (attempt / "0" / "stdout.log").read_text() == "out of 0\n"
    assert (attempt / "0" / "stderr.log").read_text() == "err of 0\n"  # tee'd: also on the console
    assert (attempt / "1" / "stdout.log").read_text() == "out of 1\n"
    assert not (attempt / "1" / "stderr.log").exists()
    assert "[rank0]:out of 0" not in result.stdout and "[rank1]:out of 1" not in result.stdout  # redirected
    assert "[rank0]:err of 0" in result.stderr and "[rank1]:err of 1" in result.stderr
    error = json.loads((attempt / "1" / "error.json").read_text())
    assert error["message"] == "RuntimeError: logged" and "raise RuntimeError" in error["traceback"]


def test_temporary_error_files_are_removed(tmp_path):
    script = write_script(tmp_path, "env.py", ENV_SCRIPT)
    result = run_launch("--nproc", "1", script, "DISTRIB_ERROR_FILE")
    job_dir = worker_env(result, 0)["DISTRIB_ERROR_FILE"].split("/")[:3]
    assert not os.path.exists("/".join(job_dir))


def test_module_no_python_and_run_path(tmp_path):
    pkg = tmp_path / "mypkg"
    pkg.mkdir()
    write_script(pkg, "__init__.py", "")
    write_script(pkg, "job.py", "import os, sys; print('module', os.environ['RANK'], sys.argv[1:])\n")
    result = run_launch("--nproc", "2", "-m", "mypkg.job", "x", env=clean_env(PYTHONPATH=tmp_path))
    assert sorted(result.stdout.splitlines()) == ["[rank0]:module 0 ['x']", "[rank1]:module 1 ['x']"]
    exe = write_script(tmp_path, "job.sh", "#!/bin/sh\necho shell $RANK $1\n")
    exe.chmod(0o755)
    result = run_launch("--nproc", "1", "--no-python", exe, "y")
    assert result.stdout == "[rank0]:shell 0 y\n"
    script = write_script(tmp_path, "rp.py", "import sys; print('runpath', __name__, sys.argv)\n")
    result = run_launch("--run-path", script, "z")
    assert result.stdout == f"[rank0]:runpath __main__ ['{script}', 'z']\n"


def test_workers_can_import_distrib(tmp_path):
    script = write_script(tmp_path, "imp.py", "import distrib, os\nprint('ok', os.environ['RANK'])\n")
    result = run_launch("--nproc", "2", script)
    assert result.returncode == 0, result.stderr
    assert sorted(result.stdout.splitlines()) == ["[rank0]:ok 0", "[rank1]:ok 1"]


def test_launcher_does_not_import_numpy_or_the_framework():
    import subprocess
    import sys
    code = ("import sys, launch.__main__, launch.agent, launch.errors; "
            "print(sorted(m for m in ('numpy', 'tensor', 'distrib', 'zmq', 'torch') if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert result.stdout.strip() == "[]"
