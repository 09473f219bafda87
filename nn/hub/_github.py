"""Fetching hub repositories with ``git``: the per-ref cache and the list of trusted repositories."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import warnings

from ._dirs import get_dir

ENV_GITHUB_URL = "DISTRIB_HUB_GITHUB_URL"
DEFAULT_GITHUB_URL = "https://github.com/{owner}/{repo}.git"
GIT_TIMEOUT_SECONDS = 300.0
TRUSTED_LIST = "trusted_list"
# Repositories of these owners are trusted without asking (torch trusts pytorch, facebookresearch, ...).
_TRUSTED_REPO_OWNERS: tuple[str, ...] = ()
_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")
_HEX = re.compile(r"^[0-9a-f]{4,64}$")


def _parse_repo_info(github: str) -> tuple[str, str, str | None]:
    """Split ``"owner/repo[:ref]"`` into (owner, repo, ref or None)."""
    if not isinstance(github, str):
        raise TypeError("the GitHub repository must be a string 'owner/repo[:ref]', "
                        f"got {type(github).__name__}")
    repo_info, sep, ref = github.partition(":")
    parts = repo_info.split("/")
    if (len(parts) != 2 or (sep and not ref)
            or not all(_NAME.match(part) and part not in (".", "..") for part in parts)):
        raise ValueError(f'Invalid GitHub repository "{github}": expected "owner/repo" or "owner/repo:ref"')
    return parts[0], parts[1], ref or None


def _repo_url(owner: str, name: str) -> str:
    template = os.getenv(ENV_GITHUB_URL) or DEFAULT_GITHUB_URL
    try:
        return template.format(owner=owner, repo=name)
    except (KeyError, IndexError, ValueError):
        raise ValueError(f"{ENV_GITHUB_URL}={template!r} is not a valid URL template: "
                         "it may only use the fields {owner} and {repo}") from None


def _git(args: list[str]) -> subprocess.CompletedProcess:
    """Run git without a terminal (it must never stop to ask for credentials)."""
    env = dict(os.environ, GIT_TERMINAL_PROMPT="0")
    try:
        return subprocess.run(["git", *args], env=env, stdin=subprocess.DEVNULL, capture_output=True,
                              text=True, timeout=GIT_TIMEOUT_SECONDS)
    except FileNotFoundError:
        raise RuntimeError("nn.hub fetches repositories with git, and no git executable "
                           "was found on PATH") from None
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"`git {' '.join(args)}` timed out after {GIT_TIMEOUT_SECONDS:g} s") from None


def _tail(stderr: str, lines: int = 4) -> str:
    kept = [line.strip() for line in stderr.strip().splitlines() if line.strip()][-lines:]
    return " | ".join(kept) or "(git printed nothing)"


def _ls_remote(url: str) -> tuple[str | None, dict[str, str]] | str:
    """The remote's HEAD target and {refname: sha}, or git's error text."""
    proc = _git(["ls-remote", "--symref", url])
    if proc.returncode:
        return _tail(proc.stderr)
    head, refs = None, {}
    for line in proc.stdout.splitlines():
        target, _, refname = line.partition("\t")
        if target.startswith("ref: "):
            head = target[len("ref: "):] if refname == "HEAD" else head
        else:
            refs[refname] = target
    return head, refs


def _default_branch(head: str | None, refs: dict[str, str]) -> str | None:
    if head and head.startswith("refs/heads/"):
        return head[len("refs/heads/"):]
    return next((b for b in ("main", "master") if f"refs/heads/{b}" in refs), None)


def _resolve_ref(repo: str, url: str, ref: str, refs: dict[str, str]) -> str:
    """What to fetch for ``ref``: a full branch or tag ref name, or a full commit SHA."""
    branch, tag = f"refs/heads/{ref}", f"refs/tags/{ref}"
    if branch in refs:
        if tag in refs:
            warnings.warn(f"'{ref}' is both a branch and a tag of {repo}: using the branch", stacklevel=4)
        return branch
    if tag in refs:
        return tag
    if _HEX.match(ref):
        tips = {sha for sha in refs.values() if sha.startswith(ref)}
        if len(tips) == 1:
            return tips.pop()
        if len(ref) in (40, 64):
            return ref
    branches = sorted(r[len("refs/heads/"):] for r in refs if r.startswith("refs/heads/"))
    tags = sorted(r[len("refs/tags/"):] for r in refs if r.startswith("refs/tags/") and not r.endswith("^{}"))
    raise RuntimeError(
        f"Cannot find ref '{ref}' in the hub repository {repo} at {url}: it is not a branch or a tag "
        f"(branches: {', '.join(branches) or 'none'}; tags: {', '.join(tags) or 'none'}); "
        "a commit must be given as its full SHA"
    )


def _fetch(repo: str, url: str, ref: str, what: str, repo_dir: str, verbose: bool) -> None:
    """Shallow-fetch ``what`` into a temporary directory, then move it to ``repo_dir``."""
    hub_dir = os.path.dirname(repo_dir)
    os.makedirs(hub_dir, exist_ok=True)
    if verbose:
        sys.stderr.write(f"Fetching {repo} ({ref}) from {url} to {repo_dir}\n")
    tmp = tempfile.mkdtemp(prefix=f".{os.path.basename(repo_dir)}.", suffix=".partial", dir=hub_dir)
    try:
        steps = (["init", "-q", tmp], ["-C", tmp, "fetch", "-q", "--depth", "1", url, what],
                 ["-C", tmp, "-c", "advice.detachedHead=false", "checkout", "-q", "FETCH_HEAD"])
        for args in steps:
            proc = _git(args)
            if proc.returncode:
                command = args[2] if args[0] == "-C" else args[0]
                raise RuntimeError(f"Cannot fetch '{ref}' of the hub repository {repo} from {url}: "
                                   f"git {command} failed: {_tail(proc.stderr)}")
        if os.path.exists(repo_dir):
            shutil.rmtree(repo_dir)
        try:
            os.rename(tmp, repo_dir)
        except OSError:
            if not os.path.isdir(repo_dir):  # else another process fetched it concurrently: use that
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _stdin_is_interactive() -> bool:
    return sys.stdin is not None and sys.stdin.isatty()


def _check_repo_is_trusted(owner: str, name: str, owner_name_ref: str, trust_repo, calling_fn: str) -> None:
    """torch.hub's trust rules; a repository trusted once is written to ``get_dir()/trusted_list``."""
    if trust_repo not in (None, True, False, "check"):
        raise ValueError(f"trust_repo must be True, False, 'check' or None, got {trust_repo!r}")
    hub_dir = get_dir()
    filepath = os.path.join(hub_dir, TRUSTED_LIST)
    trusted: tuple[str, ...] = ()
    if os.path.exists(filepath):
        with open(filepath) as file:
            trusted = tuple(line.strip() for line in file)
    owner_name = f"{owner}_{name}"
    # As in torch: a repository already in the cache was trusted when it was fetched.
    is_trusted = (owner_name in trusted or os.path.isdir(os.path.join(hub_dir, owner_name_ref))
                  or owner in _TRUSTED_REPO_OWNERS)
    if trust_repo is None:
        if not is_trusted:
            warnings.warn(
                f"You are about to download and run code from an untrusted repository ({owner}/{name}). "
                f"To add it to your trusted list, call {calling_fn}(..., trust_repo=True), or "
                f"{calling_fn}(..., trust_repo='check') to be asked only when it is not trusted yet.",
                stacklevel=4,
            )
        return
    if trust_repo is False or (trust_repo == "check" and not is_trusted):
        if not _stdin_is_interactive():
            raise RuntimeError(
                f"The repository {owner}/{name} is {'' if is_trusted else 'not '}in the list of trusted hub "
                f"repositories ({filepath}) and trust_repo={trust_repo!r} asks for confirmation, but there "
                f"is no terminal to ask: if you trust it, call {calling_fn}(..., trust_repo=True)"
            )
        response = input(
            f"The repository {owner_name} does not belong to the list of trusted repositories and as such "
            "cannot be downloaded. Do you trust this repository and wish to add it to the trusted list of "
            "repositories (y/N)?"
        ).strip().lower()
        if response in ("y", "yes"):
            if is_trusted:
                print("The repository is already trusted.")
        elif response in ("n", "no", ""):
            raise RuntimeError("Untrusted repository.")
        else:
            raise ValueError(f"Unrecognized response {response}.")
    if not is_trusted:
        os.makedirs(hub_dir, exist_ok=True)
        with open(filepath, "a") as file:
            file.write(owner_name + "\n")


def _get_cache_or_reload(github: str, force_reload: bool, trust_repo, calling_fn: str, verbose: bool = True,
                         skip_validation: bool = False) -> str:
    """The directory of a local copy of ``github`` ("owner/repo[:ref]"), fetched if needed."""
    owner, name, ref = _parse_repo_info(github)
    repo, url, hub_dir = f"{owner}/{name}", _repo_url(owner, name), get_dir()
    what = ref
    if ref is None or not skip_validation:
        listing = _ls_remote(url)
        if isinstance(listing, str):
            offline = ref is None and not force_reload
            cached = _cached_default_branch(hub_dir, owner, name) if offline else None
            if cached is None:
                raise RuntimeError(f"Cannot fetch the hub repository {repo} from {url}: "
                                   f"git ls-remote failed: {listing}")
            warnings.warn(f"Cannot reach {url} ({listing}): using the cached {cached}", stacklevel=3)
            ref = what = cached
        else:
            head, refs = listing
            if ref is None:
                ref = _default_branch(head, refs)
                if ref is None:
                    raise RuntimeError(f"The hub repository {repo} at {url} has no default branch "
                                       f"(is it empty?): name a ref as '{repo}:<branch or tag>'")
            what = _resolve_ref(repo, url, ref, refs)
    owner_name_ref = "_".join([owner, name, ref.replace("/", "_")])
    repo_dir = os.path.join(hub_dir, owner_name_ref)
    _check_repo_is_trusted(owner, name, owner_name_ref, trust_repo, calling_fn)
    if not force_reload and os.path.isdir(repo_dir):
        if verbose:
            sys.stderr.write(f"Using cache found in {repo_dir}\n")
    else:
        _fetch(repo, url, ref, what, repo_dir, verbose)
    return repo_dir


def _cached_default_branch(hub_dir: str, owner: str, name: str) -> str | None:
    found = (b for b in ("main", "master") if os.path.isdir(os.path.join(hub_dir, f"{owner}_{name}_{b}")))
    return next(found, None)
