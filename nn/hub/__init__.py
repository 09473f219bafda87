"""``nn.hub``: load models published by a repository's ``hubconf.py``. Our ``torch.hub``.

A hub repository has a ``hubconf.py`` at its top level. Its public callables
(names not starting with ``_``) are the *entrypoints*, each returning a model;
an optional module-level ``dependencies = ["numpy", ...]`` lists the modules it
needs, checked before an entrypoint runs::

    # hubconf.py
    dependencies = ["numpy"]

    def tiny_mlp(pretrained=False, hidden=32):
        \"\"\"A two-layer perceptron.\"\"\"
        ...

    model = nn.hub.load("owner/repo:v1.0", "tiny_mlp", hidden=64)     # from GitHub
    model = nn.hub.load("path/to/repo", "tiny_mlp", source="local")   # from a directory
    nn.hub.list("owner/repo"), nn.hub.help("owner/repo", "tiny_mlp")

``source="github"`` takes ``"owner/repo[:ref]"``, where ``ref`` is a branch, a
tag or a full commit SHA (default: the repository's default branch). It is
fetched with ``git`` (a shallow fetch, so only the one commit) into
``get_dir()/owner_repo_ref`` (``/`` in the ref becomes ``_``), one directory
per ref, and reused by later calls unless ``force_reload=True``. Unless
``skip_validation=True``, the ref is first checked with ``git ls-remote``, so a
missing repository or ref is reported before anything is fetched.

Environment variables:

* ``DISTRIB_HUB_DIR``: the cache directory (see ``get_dir``; ``set_dir`` overrides it).
* ``DISTRIB_HUB_GITHUB_URL``: the URL template of GitHub repositories, with the
  fields ``{owner}`` and ``{repo}``; default ``https://github.com/{owner}/{repo}.git``.
  Point it elsewhere for a mirror, or, as the tests do, at local repositories:
  ``file:///srv/git/{owner}/{repo}.git`` or a plain path ``/srv/git/{owner}/{repo}``.

Trust (``trust_repo``), as in torch: running a hubconf runs its code, so
repositories you trust are listed in ``get_dir()/trusted_list``. ``None`` (the
default) warns about an untrusted repository; ``True`` adds it to the list
without asking; ``"check"`` asks only if it is not listed; ``False`` always
asks. Asking needs an interactive terminal: without one (CI) the call fails,
telling you to pass ``trust_repo=True``. A repository already in the cache
counts as trusted. ``source="local"`` never checks trust.

Checkpoints: ``load_state_dict_from_url`` downloads into
``get_dir()/checkpoints`` once and loads the file with ``tensor.load`` (so it
must be a distrib checkpoint, written with ``tensor.save``).
"""

from __future__ import annotations

import builtins
import contextlib
import hashlib
import importlib.util
import os
import sys
from types import ModuleType
from typing import Any

from ._dirs import get_dir, set_dir
from ._download import download_url_to_file, load_state_dict_from_url
from ._github import _get_cache_or_reload

__all__ = ["download_url_to_file", "get_dir", "help", "list", "load", "load_state_dict_from_url", "set_dir"]

MODULE_HUBCONF = "hubconf.py"
VAR_DEPENDENCY = "dependencies"
_SOURCES = ("github", "local")


@contextlib.contextmanager
def _add_to_sys_path(path: str):
    """Put ``path`` first on sys.path for the block, then restore sys.path as it was."""
    saved = sys.path[:]
    sys.path.insert(0, path)
    try:
        yield
    finally:
        sys.path[:] = saved


def _import_hubconf(hubconf_dir: str) -> ModuleType:
    """Execute ``hubconf_dir/hubconf.py`` as a module with a name unique to its path.

    The file is compiled from its source every time, never read from a bytecode cache: a
    repository refetched within the same second can leave a hubconf of the same size and
    modification time, which a cached ``.pyc`` would take for the old one.
    """
    if not os.path.isdir(hubconf_dir):
        raise FileNotFoundError(f"The hub repository directory {hubconf_dir} does not exist")
    path = os.path.join(hubconf_dir, MODULE_HUBCONF)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"Cannot find {MODULE_HUBCONF} in {hubconf_dir}: a hub repository needs a "
                                f"{MODULE_HUBCONF} at its top level")
    name = "_distrib_hubconf_" + hashlib.sha1(os.path.realpath(path).encode()).hexdigest()[:16]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # so that classes defined in the hubconf can be pickled
    try:
        with open(path, "rb") as f:
            code = compile(f.read(), path, "exec")
        exec(code, module.__dict__)  # noqa: S102 - the repository was trusted by the caller
    except BaseException as exc:
        sys.modules.pop(name, None)
        exc.add_note(f"(raised while importing {path})")
        raise
    return module


def _check_module_exists(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # a missing parent package, or a bad name
        return False


def _check_dependencies(module: ModuleType) -> None:
    dependencies = getattr(module, VAR_DEPENDENCY, None)
    if dependencies is None:
        return
    if isinstance(dependencies, str) or not all(isinstance(dep, str) for dep in dependencies):
        raise TypeError(f"{MODULE_HUBCONF}: '{VAR_DEPENDENCY}' must be a list of module names, "
                        f"got {dependencies!r}")
    missing = [dep for dep in dependencies if not _check_module_exists(dep)]
    if missing:
        raise RuntimeError(f"Missing dependencies: {', '.join(missing)}")


def _entrypoints(module: ModuleType) -> builtins.list[str]:
    return [f for f in dir(module) if callable(getattr(module, f)) and not f.startswith("_")]


def _load_entry_from_hubconf(module: ModuleType, model: str):
    if not isinstance(model, str):
        raise ValueError("Invalid input: model should be a string of function name, "
                         f"got {type(model).__name__}")
    _check_dependencies(module)
    func = getattr(module, model, None)
    if func is None or not callable(func):
        available = ", ".join(_entrypoints(module)) or "none"
        raise RuntimeError(f"Cannot find callable {model} in hubconf {module.__file__} "
                           f"(available entrypoints: {available})")
    return func


def _check_source(source: str) -> str:
    if not isinstance(source, str) or source.lower() not in _SOURCES:
        raise ValueError(f'Unknown source: "{source}". Allowed values: "github" | "local".')
    return source.lower()


def _repo_dir(repo_or_dir, source: str, force_reload: bool, trust_repo, calling_fn: str, verbose: bool,
              skip_validation: bool) -> str:
    if _check_source(source) == "github":
        return _get_cache_or_reload(repo_or_dir, force_reload, trust_repo, calling_fn, verbose,
                                    skip_validation)
    return os.path.abspath(os.fspath(repo_or_dir))


def list(repo_or_dir: str, force_reload: bool = False, skip_validation: bool = False, trust_repo=None,
         verbose: bool = True, *, source: str = "github") -> builtins.list[str]:
    """List the entrypoints (public callables) of a repository's ``hubconf.py``.

    ``repo_or_dir`` is ``"owner/repo[:ref]"`` with ``source="github"``, or a
    directory with ``source="local"``. The other arguments are those of ``load``.

    Raises:
        ValueError: for a bad ``source`` or repository name.
        RuntimeError: if the repository or ref cannot be fetched, or is not trusted.
        FileNotFoundError: if the directory or its hubconf.py does not exist.
    """
    repo_dir = _repo_dir(repo_or_dir, source, force_reload, trust_repo, "list", verbose, skip_validation)
    with _add_to_sys_path(repo_dir):
        module = _import_hubconf(repo_dir)
    return _entrypoints(module)


def help(repo_or_dir: str, model: str, force_reload: bool = False, skip_validation: bool = False,
         trust_repo=None, *, source: str = "github") -> str | None:
    """Return the docstring of entrypoint ``model`` of a repository.

    Arguments are those of ``load``.

    Raises:
        RuntimeError: if the entrypoint does not exist ("Cannot find callable ..."), a
            dependency is missing ("Missing dependencies: ..."), or the repository cannot be fetched.
        FileNotFoundError: if the directory or its hubconf.py does not exist.
    """
    repo_dir = _repo_dir(repo_or_dir, source, force_reload, trust_repo, "help", True, skip_validation)
    with _add_to_sys_path(repo_dir):
        module = _import_hubconf(repo_dir)
    return _load_entry_from_hubconf(module, model).__doc__


def load(repo_or_dir: str, model: str, *args: Any, source: str = "github", trust_repo=None,
         force_reload: bool = False, verbose: bool = True, skip_validation: bool = False,
         **kwargs: Any) -> Any:
    """Load a model from a GitHub repository or a local directory: call ``hubconf.model(*args, **kwargs)``.

    ``source="github"``: ``repo_or_dir`` is ``"owner/repo[:ref]"``, fetched with
    git into the cache (see the module docstring), reused unless ``force_reload``.
    ``source="local"``: ``repo_or_dir`` is a directory holding a hubconf.py.
    ``trust_repo`` is None, True, False or "check" (see the module docstring);
    ``verbose=False`` hides the "Using cache" message; ``skip_validation``
    fetches without listing the remote's refs first. The repository directory is
    on sys.path while the hubconf is imported and the entrypoint runs.

    Raises:
        ValueError: for a bad ``source``, repository name or ``trust_repo``.
        RuntimeError: if git cannot fetch the repository (naming the URL and git's
            error) or the ref does not exist, if the repository is not trusted, if a
            dependency is missing, or if ``model`` is not a callable of the hubconf.
        FileNotFoundError: if the directory or its hubconf.py does not exist.
    """
    repo_dir = _repo_dir(repo_or_dir, source, force_reload, trust_repo, "load", verbose, skip_validation)
    with _add_to_sys_path(repo_dir):
        module = _import_hubconf(repo_dir)
        entry = _load_entry_from_hubconf(module, model)
        return entry(*args, **kwargs)
