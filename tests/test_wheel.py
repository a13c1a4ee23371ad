"""The built wheel, installed without ``-e`` into throw-away virtualenvs, imports and plays.

An editable install hides packaging bugs (a module imported by accident, a data file left out
of the wheel): these tests build the wheel from this checkout, install it into fresh venvs
(the newest dependencies, and the lowest versions pyproject.toml admits) and there import the
suite and play one game of every env through ``pettingzoo.make`` and ``gymnasium.make``.
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
# the strongest Demolition Derby heuristic as an in-env opponent: its Python playouts when
# numba (the train extra) is not installed
import importlib.util
g = gymnasium.make(GAMES["demolition_derby"].gym_id, num_players=2, opponents="dd_tactical")
fast = g.unwrapped.opponents[0].fast
assert fast == (importlib.util.find_spec("numba") is not None), fast
obs, info_ = g.reset(seed=2)
done = False
while not done:
    obs, r, term, trunc, info_ = g.step(int(rng.choice(np.flatnonzero(info_["action_mask"]))))
    done = term or trunc
print("dd_tactical", "compiled" if fast else "python")
# the batched engines (numba, a core dependency) through gymnasium.make_vec, against
# Gymnasium's sync vector env of single views (BATCHED: the games whose kernels compile here;
# a fresh venv compiles them, tens of seconds each)
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


def _play_all(batched: tuple[str, ...]) -> str:
    return f"BATCHED = {batched!r}\n" + PLAY_ALL


def test_wheel_imports_and_plays_every_env(wheel, tmp_path):
    py = _venv_with(wheel, tmp_path / "venv")
    out = _run([str(py), "-c", _play_all(GAME_DATA)], cwd=tmp_path)
    assert out.stdout.count("played") == 3 and "registry" in out.stdout, out.stdout
    assert "dd_tactical compiled" in out.stdout, out.stdout  # numba is a core dependency
    assert out.stdout.count("batched") == 3, out.stdout
    # the console script a pip user runs first works without the training extra
    cli = _run([str(tmp_path / "venv" / "bin" / "derby-envs"), "list"], cwd=tmp_path)
    assert "Kentucky Derby" in cli.stdout


def test_wheel_on_the_lowest_declared_dependencies(wheel, tmp_path):
    """pyproject.toml's floors are real: pettingzoo 1.25 (no pettingzoo.make yet), gymnasium
    1.1 (its AutoresetMode), numpy 1.26, numba 0.59 (the batched engines run on it)."""
    py = _venv_with(
        wheel,
        tmp_path / "venv",
        "pettingzoo==1.25.0",
        "gymnasium==1.1.0",
        "numpy==1.26.4",
        "numba==0.59.1",
    )
    # the batched engine of one game (its kernels compiled by numba 0.59); the wheel's own venv
    # above compiles and plays all three on the newest numba
    out = _run(
        [str(py), "-c", _play_all(("kentucky_derby",))],
        cwd=tmp_path,
        env={**os.environ, "PYTHONWARNINGS": ""},
    )
    assert out.stdout.count("played") == 3 and "pettingzoo 1.25.0 modules" in out.stdout, out.stdout
    assert out.stdout.count("batched") == 1, out.stdout
