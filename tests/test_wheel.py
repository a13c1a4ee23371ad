"""The built wheel, installed without ``-e`` into throw-away virtualenvs, imports and plays.

An editable install hides packaging bugs (a module imported by accident, a data file left out
of the wheel): these tests build the wheel from this checkout, install it into fresh venvs
(the newest dependencies, and the lowest versions pyproject.toml admits) and there import the
suite and play one game of every env through ``pettingzoo.make`` and ``gymnasium.make``, and
the batched engine through ``gymnasium.make_vec``.

A fresh venv compiles every numba kernel it runs, from a cold cache: Kentucky Derby's batched
engine takes ~15 s, Derby's ~30 s, Demolition Derby's rules with ``dd_tactical``'s playouts
~90 s (twice that on numba 0.59). The default run compiles Kentucky Derby's batched engine in
both venvs (the newest numba is the one the rest of the suite compiles every kernel with); the
slow tests (``make test-slow``) compile and run every kernel in both.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

#: Run inside the wheel's venv: every registered env plays one masked-random game.
PLAY_ALL = r"""
import importlib.metadata, sys
import numpy as np, gymnasium
import derby_envs
from derby_envs import GAMES
rng = np.random.default_rng(0)
use_registry = hasattr(__import__("pettingzoo"), "make")
for name, info in GAMES.items():
    mod = __import__(info.module, fromlist=["env"])
    if use_registry:
        import pettingzoo
        aec, par = pettingzoo.make("aec", info.pz_id), pettingzoo.make("parallel", info.pz_id)
    else:
        aec, par = mod.env(), mod.parallel_env()
    aec.reset(seed=1)
    for agent in aec.agent_iter():
        obs, r, term, trunc, _ = aec.last()
        aec.step(None if term or trunc else int(rng.choice(np.flatnonzero(obs["action_mask"]))))
    obs, infos = par.reset(seed=1)
    while par.agents:
        obs, *_ = par.step({a: int(rng.choice(np.flatnonzero(obs[a]["action_mask"]))) for a in par.agents})
    g = gymnasium.make(info.gym_id)
    obs, info_ = g.reset(seed=1)
    done = False
    while not done:
        obs, r, term, trunc, info_ = g.step(int(rng.choice(np.flatnonzero(info_["action_mask"]))))
        done = term or trunc
    print("played", name)
print("pettingzoo", importlib.metadata.version("pettingzoo"), "registry" if use_registry else "modules")
# the strongest Demolition Derby heuristic as an in-env opponent takes its compiled playouts
# (numba is a core dependency); PLAYOUTS: a game against it (compiling them, ~90 s)
g = gymnasium.make(GAMES["demolition_derby"].gym_id, num_players=2, opponents="dd_tactical")
fast = g.unwrapped.opponents[0].fast
assert fast, "dd_tactical should take its compiled playouts"
if PLAYOUTS:
    obs, info_ = g.reset(seed=2)
    done = False
    while not done:
        obs, r, term, trunc, info_ = g.step(int(rng.choice(np.flatnonzero(info_["action_mask"]))))
        done = term or trunc
    print("dd_tactical played")
# the batched engines through gymnasium.make_vec, against Gymnasium's sync vector env of
# single views (BATCHED: the games whose kernels compile here, tens of seconds each)
for name, info in GAMES.items():
    if name not in BATCHED:
        continue
    native = gymnasium.make_vec(info.gym_id, num_envs=4)
    sync = gymnasium.make_vec(info.gym_id, num_envs=4, vectorization_mode="sync")
    assert type(native).__name__ == "DerbyVectorEnv", type(native)
    (o1, i1), (o2, i2) = native.reset(seed=3), sync.reset(seed=3)
    for _ in range(40):
        assert np.array_equal(o1, o2) and np.array_equal(i1["action_mask"], i2["action_mask"])
        acts = np.array([rng.choice(np.flatnonzero(m)) for m in i1["action_mask"]])
        o1, r1, t1, _, i1 = native.step(acts)
        o2, r2, t2, _, i2 = sync.step(acts)
        assert np.array_equal(r1, r2) and np.array_equal(t1, t2)
    print("batched", name)
"""


def _run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    out = subprocess.run(cmd, capture_output=True, text=True, **kw)
    assert out.returncode == 0, f"{' '.join(map(str, cmd))} failed:\n{out.stdout}\n{out.stderr}"
    return out


#: Left out of the copy the wheel is built from: setuptools' in-tree ``build/`` keeps modules
#: that were moved or deleted since the last build, and would ship them.
_NOT_SOURCE = shutil.ignore_patterns(
    ".git", ".venv", "build", "dist", "runs", "*.egg-info", "__pycache__", ".*_cache"
)
PACKAGES = ("derby_envs", "agents", "training")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    src = tmp_path_factory.mktemp("src") / "derby-envs"
    shutil.copytree(ROOT, src, ignore=_NOT_SOURCE)
    dist = tmp_path_factory.mktemp("dist")
    _run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(dist), str(src)])
    (whl,) = dist.glob("derby_envs-*.whl")
    return whl


def test_wheel_ships_exactly_the_source_modules(wheel):
    """Every Python module of the packages is in the wheel, and nothing else is (no module
    left over from an earlier layout)."""
    import zipfile

    shipped = {n for n in zipfile.ZipFile(wheel).namelist() if n.endswith(".py")}
    source = {
        p.relative_to(ROOT).as_posix()
        for pkg in PACKAGES
        for p in (ROOT / pkg).rglob("*.py")
        if "__pycache__" not in p.parts
    }
    assert shipped == source, (sorted(shipped - source), sorted(source - shipped))


def _venv_with(wheel: Path, where: Path, *requirements: str) -> Path:
    venv.create(where, with_pip=True)
    py = where / "bin" / "python"
    # cwd elsewhere: nothing from this checkout can be imported by accident
    _run([str(py), "-m", "pip", "install", "--quiet", str(wheel), *requirements], cwd=where)
    return py


def test_wheel_contents(wheel):
    import zipfile

    names = zipfile.ZipFile(wheel).namelist()
    for game in GAME_DATA:
        assert any(n.startswith(f"derby_envs/games/{game}/data/") for n in names), game
    assert "derby_envs/test.py" in names
    assert any(n.startswith("agents/pretrained/") and n.endswith(".zip") for n in names)


GAME_DATA = ("derby", "kentucky_derby", "demolition_derby")


def _play_all(batched: tuple[str, ...], playouts: bool = False) -> str:
    return f"BATCHED = {batched!r}\nPLAYOUTS = {playouts!r}\n" + PLAY_ALL


#: the lowest versions pyproject.toml admits: pettingzoo 1.25 (no pettingzoo.make yet),
#: gymnasium 1.1 (its AutoresetMode), numpy 1.26, numba 0.59 (the batched engines run on it)
LOWEST = ("pettingzoo==1.25.0", "gymnasium==1.1.0", "numpy==1.26.4", "numba==0.59.1")


def _check_newest(wheel: Path, tmp_path: Path, batched: tuple[str, ...], playouts: bool) -> None:
    py = _venv_with(wheel, tmp_path / "venv")
    out = _run([str(py), "-c", _play_all(batched, playouts)], cwd=tmp_path)
    assert out.stdout.count("played") == 3 + playouts and "registry" in out.stdout, out.stdout
    assert out.stdout.count("batched") == len(batched), out.stdout
    # the console script a pip user runs first works without the training extra
    cli = _run([str(tmp_path / "venv" / "bin" / "derby-envs"), "list"], cwd=tmp_path)
    assert "Kentucky Derby" in cli.stdout


def _check_lowest(wheel: Path, tmp_path: Path, batched: tuple[str, ...], playouts: bool) -> None:
    py = _venv_with(wheel, tmp_path / "venv", *LOWEST)
    out = _run(
        [str(py), "-c", _play_all(batched, playouts)],
        cwd=tmp_path,
        env={**os.environ, "PYTHONWARNINGS": ""},
    )
    assert out.stdout.count("played") == 3 + playouts, out.stdout
    assert "pettingzoo 1.25.0 modules" in out.stdout, out.stdout
    assert out.stdout.count("batched") == len(batched), out.stdout


def test_wheel_imports_and_plays_every_env(wheel, tmp_path):
    """The newest dependencies: every env, the console script, one batched engine."""
    _check_newest(wheel, tmp_path, ("kentucky_derby",), playouts=False)


def test_wheel_on_the_lowest_declared_dependencies(wheel, tmp_path):
    """pyproject.toml's floors are real (``LOWEST``): every env, one batched engine compiled by
    numba 0.59."""
    _check_lowest(wheel, tmp_path, ("kentucky_derby",), playouts=False)


@pytest.mark.slow
@pytest.mark.parametrize("deps", ["newest", "lowest"])
def test_wheel_compiles_and_runs_every_kernel(wheel, tmp_path, deps):
    """Every game's batched engine and ``dd_tactical``'s compiled playouts, compiled from the
    installed wheel on the newest numba and on numba 0.59."""
    check = _check_newest if deps == "newest" else _check_lowest
    check(wheel, tmp_path, GAME_DATA, playouts=True)
