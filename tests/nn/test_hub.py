"""``nn.hub`` with git: load/list/help from GitHub-style and local repositories, the per-ref cache,
trust, and every error path.

"GitHub" here is a set of local git repositories made by the tests, reached through the
``DISTRIB_HUB_GITHUB_URL`` template as ``file://`` URLs or plain paths; nothing touches the network.
"""

from __future__ import annotations

import builtins
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from nn import hub
from nn.hub import _dirs, _github

GIT = ["git", "-c", "user.name=hub-test", "-c", "user.email=hub-test@example.com",
       "-c", "commit.gpgsign=false", "-c", "tag.gpgsign=false"]


def git(cwd, *args) -> str:
    return subprocess.run([*GIT, *args], cwd=cwd, check=True, capture_output=True, text=True,
                          timeout=30).stdout.strip()


def hubconf(version: str, deps=("numpy",)) -> str:
    return textwrap.dedent(f'''
        """Test hub repository."""
        dependencies = {list(deps)!r}
        VERSION = {version!r}

        def model(*args, **kwargs):
            """Build the test model, version {version}."""
            return {{"version": VERSION, "args": args, "kwargs": kwargs}}

        def helper():
            """Another entrypoint."""
            return VERSION

        def _private():
            return None
    ''')


class Remote:
    """A git repository standing in for github.com/owner/name."""

    def __init__(self, root, owner: str, name: str, branch: str = "main") -> None:
        self.path = root / owner / f"{name}.git"
        self.path.mkdir(parents=True)
        git(self.path, "init", "-q", "-b", branch)

    def commit(self, files: dict[str, str]) -> str:
        for rel, text in files.items():
            (self.path / rel).parent.mkdir(parents=True, exist_ok=True)
            (self.path / rel).write_text(text)
        git(self.path, "add", "-A")
        git(self.path, "commit", "-q", "-m", "update")
        return git(self.path, "rev-parse", "HEAD")


@pytest.fixture(autouse=True)
def hub_dir(tmp_path, monkeypatch):
    """Each test gets its own hub cache and 'GitHub'; hubconf modules it imported are forgotten."""
    monkeypatch.setenv("DISTRIB_HUB_DIR", str(tmp_path / "hub"))
    monkeypatch.setenv("DISTRIB_HUB_GITHUB_URL", f"file://{tmp_path}/github/{{owner}}/{{repo}}.git")
    monkeypatch.setattr(_dirs, "_hub_dir", None)
    modules_before = set(sys.modules)
    yield tmp_path / "hub"
    for name in set(sys.modules) - modules_before:
        if name.startswith(("_distrib_hubconf_", "sibling_")):
            del sys.modules[name]
    shutil.rmtree(tmp_path, ignore_errors=True)


@pytest.fixture
def remote(tmp_path):
    """owner/repo with hubconf version "v1" on main."""
    repo = Remote(tmp_path / "github", "owner", "repo")
    repo.commit({"hubconf.py": hubconf("v1")})
    return repo


# ------------------------------------------------------------------ directories
@pytest.mark.parametrize("hub_env, xdg, set_to, expected", [
    ("envdir", "xdg", None, "{tmp}/envdir"),
    ("envdir", "xdg", "setdir", "{tmp}/setdir"),
    (None, "xdg", None, "{tmp}/xdg/distrib/hub"),
    (None, None, None, "{home}/.cache/distrib/hub"),
    (None, None, "~/custom", "{home}/custom"),
])
def test_get_dir_precedence(tmp_path, monkeypatch, hub_env, xdg, set_to, expected):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for var, value in (("DISTRIB_HUB_DIR", hub_env), ("XDG_CACHE_HOME", xdg)):
        if value is None:
            monkeypatch.delenv(var, raising=False)
        else:
            monkeypatch.setenv(var, str(tmp_path / value))
    if set_to is not None:
        hub.set_dir(set_to if set_to.startswith("~") else tmp_path / set_to)
    assert hub.get_dir() == expected.format(tmp=tmp_path, home=tmp_path / "home")


def test_set_dir_none_goes_back_to_the_environment(tmp_path):
    hub.set_dir(tmp_path / "chosen")
    hub.set_dir(None)
    assert hub.get_dir() == str(tmp_path / "hub")


def test_set_dir_rejects_non_paths():
    with pytest.raises(TypeError, match="set_dir expects a path or None, got int"):
        hub.set_dir(3)


def test_set_dir_moves_the_cache(tmp_path, remote):
    hub.set_dir(tmp_path / "elsewhere")
    hub.load("owner/repo", "model", trust_repo=True)
    assert (tmp_path / "elsewhere" / "owner_repo_main" / "hubconf.py").is_file()
    assert not (tmp_path / "hub").exists()


# ------------------------------------------------------------------ load / list / help
def test_load_from_github_passes_args_and_caches_per_ref(remote, hub_dir):
    out = hub.load("owner/repo", "model", 1, 2, trust_repo=True, scale=3)
    assert out == {"version": "v1", "args": (1, 2), "kwargs": {"scale": 3}}
    assert (hub_dir / "owner_repo_main" / "hubconf.py").is_file()
    assert (hub_dir / "trusted_list").read_text().splitlines() == ["owner_repo"]


def test_plain_path_url_template_works(tmp_path, remote, monkeypatch):
    monkeypatch.setenv("DISTRIB_HUB_GITHUB_URL", f"{tmp_path}/github/{{owner}}/{{repo}}.git")
    assert hub.load("owner/repo", "helper", trust_repo=True) == "v1"


@pytest.mark.parametrize("source", ["github", "local", "LOCAL"])
def test_list_and_help(remote, source):
    repo = "owner/repo" if source == "github" else str(remote.path)
    assert hub.list(repo, trust_repo=True, source=source) == ["helper", "model"]
    assert hub.help(repo, "model", trust_repo=True, source=source) == "Build the test model, version v1."


def test_load_local_accepts_a_path_object(remote):
    assert hub.load(remote.path, "model", source="local")["version"] == "v1"


def test_second_load_uses_the_cache_and_force_reload_refetches(remote, hub_dir, tmp_path, capfd, monkeypatch):
    # A bytecode cache outside the repository (PYTHONPYCACHEPREFIX) outlives the refetch.
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    monkeypatch.setattr(sys, "pycache_prefix", str(tmp_path / "pycache"))
    hub.load("owner/repo", "model", trust_repo=True)
    cached = hub_dir / "owner_repo_main" / "hubconf.py"
    first_mtime = cached.stat().st_mtime_ns
    marker = hub_dir / "owner_repo_main" / "marker"
    marker.write_text("still here")
    remote.commit({"hubconf.py": hubconf("v2")})  # the same size as v1's
    capfd.readouterr()
    assert hub.load("owner/repo", "model", trust_repo=True)["version"] == "v1"
    assert marker.exists()
    assert "Using cache found in" in capfd.readouterr().err
    hub.load("owner/repo", "model", trust_repo=True, verbose=False)
    assert capfd.readouterr().err == ""
    refetched = hub.list("owner/repo", trust_repo=True, force_reload=True)
    os.utime(cached, ns=(first_mtime, first_mtime))  # as if refetched within the same second
    assert refetched == ["helper", "model"]
    assert hub.load("owner/repo", "model", trust_repo=True)["version"] == "v2"
    assert not marker.exists()
    assert sorted(p.name for p in hub_dir.iterdir()) == ["owner_repo_main", "trusted_list"]  # no leftovers


def test_branches_tags_and_commits_get_their_own_cache_dirs(remote, hub_dir):
    first = git(remote.path, "rev-parse", "HEAD")
    git(remote.path, "tag", "-a", "v1.0", "-m", "release")
    git(remote.path, "checkout", "-q", "-b", "feature/x")
    remote.commit({"hubconf.py": hubconf("feature")})
    git(remote.path, "checkout", "-q", "-b", "dev")
    remote.commit({"hubconf.py": hubconf("dev")})
    git(remote.path, "checkout", "-q", "main")
    cases = [("", "main", "v1"), (":main", "main", "v1"), (":dev", "dev", "dev"), (":v1.0", "v1.0", "v1"),
             (":feature/x", "feature_x", "feature"), (f":{first}", first, "v1"), (f":{first[:10]}", first[:10], "v1")]
    for suffix, dir_ref, version in cases:
        assert hub.load(f"owner/repo{suffix}", "helper", trust_repo=True) == version, suffix
        assert (hub_dir / f"owner_repo_{dir_ref}" / "hubconf.py").is_file(), suffix


def test_commit_that_is_not_a_tip_is_fetched_by_full_sha(remote, hub_dir):
    old = git(remote.path, "rev-parse", "HEAD")
    remote.commit({"hubconf.py": hubconf("v2")})
    assert hub.load(f"owner/repo:{old}", "helper", trust_repo=True) == "v1"


def test_default_branch_follows_the_remote_head(tmp_path, hub_dir):
    Remote(tmp_path / "github", "owner", "trunked", branch="trunk").commit({"hubconf.py": hubconf("t")})
    assert hub.load("owner/trunked", "helper", trust_repo=True) == "t"
    assert (hub_dir / "owner_trunked_trunk").is_dir()


def test_skip_validation_fetches_without_listing_refs(remote, hub_dir, monkeypatch):
    real_git = _github._git
    calls = []
    monkeypatch.setattr(_github, "_git", lambda args: calls.append(args[0]) or real_git(args))
    assert hub.load("owner/repo:main", "helper", trust_repo=True, skip_validation=True) == "v1"
    assert "ls-remote" not in calls


def test_cached_default_branch_is_used_when_the_remote_is_unreachable(remote, monkeypatch, tmp_path):
    hub.load("owner/repo", "model", trust_repo=True)
    monkeypatch.setenv("DISTRIB_HUB_GITHUB_URL", f"file://{tmp_path}/nowhere/{{owner}}/{{repo}}.git")
    with pytest.warns(UserWarning, match="Cannot reach file://.*nowhere/owner/repo.git .*using the cached main"):
        assert hub.load("owner/repo", "helper", trust_repo=True) == "v1"


def test_hubconf_dir_is_on_sys_path_during_import_and_call_only(tmp_path):
    repo = tmp_path / "local"
    repo.mkdir()
    (repo / "sibling_eager.py").write_text("VALUE = 'eager'\n")
    (repo / "sibling_lazy.py").write_text("VALUE = 'lazy'\n")
    (repo / "hubconf.py").write_text(textwrap.dedent("""
        import sibling_eager

        def model():
            import sibling_lazy
            return sibling_eager.VALUE, sibling_lazy.VALUE
    """))
    path_before = sys.path[:]
    assert hub.load(str(repo), "model", source="local") == ("eager", "lazy")
    assert hub.list(str(repo), source="local") == ["model"]
    assert sys.path == path_before


def test_two_local_repos_do_not_share_a_hubconf_module(tmp_path):
    for version in ("a", "b"):
        (tmp_path / version).mkdir()
        (tmp_path / version / "hubconf.py").write_text(hubconf(version))
    assert [hub.load(str(tmp_path / v), "helper", source="local") for v in "ab"] == ["a", "b"]
    assert "hubconf" not in sys.modules


def test_failing_hubconf_names_itself_and_restores_sys_path(tmp_path):
    (tmp_path / "hubconf.py").write_text("raise ImportError('broken hubconf')\n")
    path_before = sys.path[:]
    with pytest.raises(ImportError, match="broken hubconf") as info:
        hub.load(str(tmp_path), "model", source="local")
    assert any(str(tmp_path / "hubconf.py") in note for note in info.value.__notes__)
    assert sys.path == path_before


# ------------------------------------------------------------------ trust
def test_trust_none_warns_for_an_untrusted_repo_and_does_not_list_it(remote, hub_dir):
    with pytest.warns(UserWarning, match=r"untrusted repository \(owner/repo\).*trust_repo=True"):
        hub.load("owner/repo", "model")
    assert not (hub_dir / "trusted_list").exists()


@pytest.mark.parametrize("trust_repo", [False, "check"])
def test_asking_for_trust_without_a_terminal_fails_before_fetching(remote, hub_dir, trust_repo):
    with pytest.raises(RuntimeError, match=r"owner/repo is not in the list of trusted .*no terminal to ask.*"
                                           r"load\(\.\.\., trust_repo=True\)"):
        hub.load("owner/repo", "model", trust_repo=trust_repo)
    assert not (hub_dir / "owner_repo_main").exists()


def test_check_passes_silently_once_trusted_and_false_still_asks(remote, hub_dir):
    hub.load("owner/repo", "model", trust_repo=True)
    (hub_dir / "trusted_list").unlink()  # a cached repository counts as trusted, as in torch
    assert hub.load("owner/repo", "helper", trust_repo="check") == "v1"
    with pytest.raises(RuntimeError, match="owner/repo is in the list of trusted .*no terminal to ask"):
        hub.list("owner/repo", trust_repo=False)


@pytest.mark.parametrize("answer, error, message", [
    ("y", None, None),
    ("YES", None, None),
    ("n", RuntimeError, "Untrusted repository."),
    ("", RuntimeError, "Untrusted repository."),
    ("maybe", ValueError, "Unrecognized response maybe."),
])
def test_interactive_trust_prompt(remote, hub_dir, monkeypatch, answer, error, message):
    monkeypatch.setattr(_github, "_stdin_is_interactive", lambda: True)
    monkeypatch.setattr(builtins, "input", lambda prompt: answer)
    if error is None:
        assert hub.load("owner/repo", "helper", trust_repo="check") == "v1"
        assert (hub_dir / "trusted_list").read_text() == "owner_repo\n"
    else:
        with pytest.raises(error, match=message):
            hub.load("owner/repo", "helper", trust_repo="check")
        assert not (hub_dir / "owner_repo_main").exists()


# ------------------------------------------------------------------ errors
@pytest.mark.parametrize("repo", ["noslash", "a/b/c", "a/b:", "../x", "a/..", "a b/c"])
def test_malformed_github_repo_names(repo):
    with pytest.raises(ValueError, match=f'Invalid GitHub repository "{repo}": expected "owner/repo"'):
        hub.load(repo, "model", trust_repo=True)


@pytest.mark.parametrize("call, error, message", [
    (lambda: hub.load("owner/repo", "model", source="svn"), ValueError,
     'Unknown source: "svn". Allowed values: "github" | "local".'),
    (lambda: hub.load("owner/repo", "model", trust_repo="always"), ValueError,
     "trust_repo must be True, False, 'check' or None, got 'always'"),
    (lambda: hub.load("owner/repo", 3, trust_repo=True), ValueError,
     "model should be a string of function name, got int"),
    (lambda: hub.load("owner/repo", "nope", trust_repo=True), RuntimeError,
     r"Cannot find callable nope in hubconf .*hubconf.py \(available entrypoints: helper, model\)"),
    (lambda: hub.help("owner/repo", "VERSION", trust_repo=True), RuntimeError,
     "Cannot find callable VERSION in hubconf"),
    (lambda: hub.load("owner/repo:nope", "model", trust_repo=True), RuntimeError,
     r"Cannot find ref 'nope' in the hub repository owner/repo at file://.*/github/owner/repo.git: "
     r"it is not a branch or a tag \(branches: main; tags: none\)"),
    (lambda: hub.load("owner/repo:abc1234", "model", trust_repo=True), RuntimeError,
     "Cannot find ref 'abc1234' .*a commit must be given as its full SHA"),
    (lambda: hub.load("owner/repo:nope", "model", trust_repo=True, skip_validation=True), RuntimeError,
     r"Cannot fetch 'nope' of the hub repository owner/repo from file://.*/owner/repo.git: git fetch failed: .*nope"),
    (lambda: hub.load("owner/missing", "model", trust_repo=True), RuntimeError,
     r"Cannot fetch the hub repository owner/missing from file://.*/github/owner/missing.git: "
     r"git ls-remote failed: .*does not appear to be a git repository"),
    (lambda: hub.load("owner/missing:main", "model", trust_repo=True, skip_validation=True), RuntimeError,
     "Cannot fetch 'main' of the hub repository owner/missing from .*: git fetch failed: .*git repository"),
])
def test_error_paths(remote, call, error, message):
    with pytest.raises(error, match=message):
        call()


@pytest.mark.parametrize("deps, missing", [
    (["numpy", "no_such_pkg_a", "no_such_pkg_b"], "no_such_pkg_a, no_such_pkg_b"),
    (["no_such_pkg_c.sub", "os.path"], "no_such_pkg_c.sub"),
])
def test_missing_dependencies_are_listed(tmp_path, deps, missing):
    (tmp_path / "hubconf.py").write_text(hubconf("v", deps=deps))
    with pytest.raises(RuntimeError, match=f"^Missing dependencies: {missing}$"):
        hub.load(str(tmp_path), "model", source="local")
    with pytest.raises(RuntimeError, match="Missing dependencies"):
        hub.help(str(tmp_path), "model", source="local")
    assert hub.list(str(tmp_path), source="local") == ["helper", "model"]  # listing needs no dependencies


def test_dependencies_must_be_a_list_of_names(tmp_path):
    (tmp_path / "hubconf.py").write_text("dependencies = 'numpy'\ndef model():\n    return 1\n")
    with pytest.raises(TypeError, match="'dependencies' must be a list of module names, got 'numpy'"):
        hub.load(str(tmp_path), "model", source="local")


def test_repo_without_hubconf(tmp_path, hub_dir):
    Remote(tmp_path / "github", "owner", "bare").commit({"README": "no hubconf here\n"})
    with pytest.raises(FileNotFoundError, match="Cannot find hubconf.py in .*owner_bare_main: a hub repository"):
        hub.load("owner/bare", "model", trust_repo=True)
    with pytest.raises(FileNotFoundError, match="Cannot find hubconf.py in"):
        hub.list(str(tmp_path), source="local")
    with pytest.raises(FileNotFoundError, match="hub repository directory .*no_dir does not exist"):
        hub.load(str(tmp_path / "no_dir"), "model", source="local")


def test_empty_repository_has_no_default_branch(tmp_path):
    Remote(tmp_path / "github", "owner", "empty")
    with pytest.raises(RuntimeError, match=r"owner/empty at .* has no default branch \(is it empty\?\): "
                                           r"name a ref as 'owner/empty:<branch or tag>'"):
        hub.load("owner/empty", "model", trust_repo=True)


def test_bad_url_template(monkeypatch):
    monkeypatch.setenv("DISTRIB_HUB_GITHUB_URL", "file:///srv/{user}/{repo}")
    with pytest.raises(ValueError, match="DISTRIB_HUB_GITHUB_URL=.* may only use the fields {owner} and {repo}"):
        hub.load("owner/repo", "model", trust_repo=True)


def test_missing_git_executable(remote, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path / "empty_path"))
    with pytest.raises(RuntimeError, match="no git executable was found on PATH"):
        hub.load("owner/repo", "model", trust_repo=True)


def test_git_timeout_is_an_error(remote, monkeypatch):
    def too_slow(cmd, **kwargs):
        raise subprocess.TimeoutExpired(cmd, kwargs["timeout"])

    monkeypatch.setattr(_github.subprocess, "run", too_slow)
    with pytest.raises(RuntimeError, match=r"`git ls-remote --symref file://.*` timed out after 300 s"):
        hub.load("owner/repo", "model", trust_repo=True)


def test_the_example_hub_repository_loads_from_git_with_pretrained_weights(tmp_path):
    examples = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "hub_local")
    repo = Remote(tmp_path / "github", "distrib", "hub-example")
    shutil.copytree(examples, repo.path, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__"))
    repo.commit({})
    sys.modules.pop("tiny_models", None)
    try:
        model = hub.load("distrib/hub-example", "tiny_mlp", pretrained=True, trust_repo=True)
        import tensor

        x = tensor.randn(256, 4, generator=tensor.Generator().manual_seed(0))
        accuracy = (model(x).argmax(1) == x[:, :3].argmax(1)).float().mean().item()
    finally:
        sys.modules.pop("tiny_models", None)
    assert accuracy > 0.9
    assert hub.list("distrib/hub-example") == ["tiny_mlp"]
