"""Files from others are data: a checkpoint carrying a pickle payload never runs it, through
every entry point that loads policies (PPOPolicy.load, evaluate, play, pool members, pool.json
snapshots, training configs); the safe loader plays the shipped policies exactly as sb3's full
load does; replays are plain JSON and YAML configs are safe-loaded."""

from __future__ import annotations

import base64
import io
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from sb3_contrib import MaskablePPO

from agents.ppo import CheckpointError, PPOPolicy, pickle_globals, read_checkpoint
from derby_envs.core.policy import choose
from derby_envs.registry import make_game
from training.cli import main
from training.train.config import ConfigError, config_from_dict, load_config
from training.train.pool import OpponentPool, read_pool_file

ROOT = Path(__file__).resolve().parents[2]
PRETRAINED = sorted((ROOT / "agents" / "pretrained").glob("*.zip"))
KD5 = ROOT / "agents" / "pretrained" / "kentucky_derby_5p.zip"


class _Payload:
    """Unpickling this calls ``exec`` on code that creates the marker file."""

    def __init__(self, marker: Path) -> None:
        self.code = f"open({str(marker)!r}, 'w').write('payload ran')"

    def __reduce__(self):
        return (exec, (self.code,))


def evil_data_zip(dest: Path, marker: Path, src: Path = KD5) -> Path:
    """``src`` with a payload in the ``:serialized:`` field of every pickled data entry (so any
    loader that decodes any of them runs it); plain fields and weights untouched."""
    blob = base64.b64encode(__import__("pickle").dumps(_Payload(marker))).decode()
    with zipfile.ZipFile(src) as z:
        data = json.loads(z.read("data"))
        for value in data.values():
            if isinstance(value, dict) and ":serialized:" in value:
                value[":serialized:"] = blob
        with zipfile.ZipFile(dest, "w") as out:
            for item in z.infolist():
                body = json.dumps(data).encode() if item.filename == "data" else z.read(item)
                out.writestr(item.filename, body)
    return dest


def evil_weights_zip(dest: Path, marker: Path, src: Path = KD5) -> Path:
    """``src`` whose policy.pth is a torch file holding the payload instead of tensors."""
    buf = io.BytesIO()
    torch.save({"action_net.weight": _Payload(marker)}, buf)
    with zipfile.ZipFile(src) as z, zipfile.ZipFile(dest, "w") as out:
        for item in z.infolist():
            body = buf.getvalue() if item.filename == "policy.pth" else z.read(item)
            out.writestr(item.filename, body)
    return dest


@pytest.fixture
def evil(tmp_path):
    """(data-payload zip, weights-payload zip, marker path)."""
    marker = tmp_path / "PWNED"
    return (
        evil_data_zip(tmp_path / "evil_data.zip", marker),
        evil_weights_zip(tmp_path / "evil_weights.zip", marker),
        marker,
    )


def test_the_payloads_are_real(tmp_path):
    """Control: sb3's own decoding and torch's full unpickler do run them (so the tests below
    could fail)."""
    from stable_baselines3.common.save_util import json_to_data

    m1, m2 = tmp_path / "m1", tmp_path / "m2"
    with zipfile.ZipFile(evil_data_zip(tmp_path / "a.zip", m1)) as z:
        json_to_data(z.read("data").decode())
    assert m1.read_text() == "payload ran"
    with zipfile.ZipFile(evil_weights_zip(tmp_path / "b.zip", m2)) as z:
        torch.load(io.BytesIO(z.read("policy.pth")), weights_only=False)
    assert m2.read_text() == "payload ran"


def test_ppo_policy_load_refuses_both_payloads(evil):
    data_zip, weights_zip, marker = evil
    game = make_game("kentucky_derby", num_players=5)
    with pytest.raises(
        CheckpointError, match=r"evil_data\.zip.*pickled reference to builtins\.exec"
    ):
        PPOPolicy.load(data_zip, game)
    with pytest.raises(
        CheckpointError, match=r"evil_weights\.zip.*policy\.pth is not plain weights"
    ):
        PPOPolicy.load(weights_zip, game)
    assert not marker.exists()


def test_evaluate_and_play_cli_refuse_them(evil, capsys):
    data_zip, weights_zip, marker = evil
    for path in (data_zip, weights_zip):
        rc = main(
            ["evaluate", "--game", "kentucky_derby", "--players", "5", "--lineup", str(path),
             "kd_value", "--deals", "1", "--quiet"]
        )  # fmt: skip
        assert rc == 2
        err = capsys.readouterr().err
        assert str(path) in err and "Traceback" not in err
    # play: opponents are loaded (and refused) before the first prompt
    res = subprocess.run(
        [sys.executable, "-m", "training.cli", "play", "kentucky_derby", "--players", "5",
         "--opponents", str(data_zip), "--seed", "1"],
        cwd=ROOT, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120,
    )  # fmt: skip
    assert res.returncode == 2 and "pickled reference to builtins.exec" in res.stderr
    assert "Traceback" not in res.stderr
    assert not marker.exists()


def test_pool_member_and_training_config_refuse_them(evil, tmp_path):
    data_zip, weights_zip, marker = evil
    game = make_game("kentucky_derby", num_players=5)
    pool = OpponentPool(game, [{"agent": str(data_zip)}])
    with pytest.raises(CheckpointError, match="builtins.exec"):
        pool.draw(np.random.default_rng(0))
    raw = {
        "game": "kentucky_derby",
        "game_params": {"num_players": 5},
        "run_dir": str(tmp_path / "run"),
        "opponents": {"pool": [{"agent": str(weights_zip)}]},
    }
    with pytest.raises(ConfigError, match=r"opponents\.pool\[0\]\.agent.*not plain weights"):
        config_from_dict(raw)
    assert not (tmp_path / "run").exists()  # refused before any directory is made
    assert not marker.exists()


def test_pool_json_snapshots_load_safely_and_stay_in_the_run_dir(evil, tmp_path):
    data_zip, _, marker = evil
    run = tmp_path / "run"
    (run / "snapshots").mkdir(parents=True)
    inside = run / "snapshots" / "step_000000000256.zip"
    inside.write_bytes(data_zip.read_bytes())
    game = make_game("kentucky_derby", num_players=5)
    pool = OpponentPool(
        game, [{"agent": "random", "weight": 1e-9}], snapshot_weight=1.0,
        snapshots=[{"path": "snapshots/step_000000000256.zip", "step": 256}], root=run,
    )  # fmt: skip
    with pytest.raises(CheckpointError, match="builtins.exec"):
        for seed in range(5):  # the snapshot holds nearly all the weight
            pool.draw(np.random.default_rng(seed))
    # pool.json may not point outside its run directory (absolute, .., or a symlink out)
    (run / "snapshots" / "out.zip").symlink_to(data_zip)
    for bad in (str(data_zip), "../evil_data.zip", "snapshots/../../evil_data.zip",
                "snapshots/out.zip"):  # fmt: skip
        (run / "pool.json").write_text(
            json.dumps({"format": 1, "step": 0, "next_snapshot_at": 1,
                        "snapshots": [{"path": bad, "step": 0}]})
        )  # fmt: skip
        with pytest.raises(ConfigError, match="outside the run directory"):
            read_pool_file(run / "pool.json")
        outside = OpponentPool(
            game, [{"agent": "random", "weight": 1e-9}], snapshot_weight=1.0,
            snapshots=[{"path": bad, "step": 0}], root=run,
        )  # fmt: skip
        with pytest.raises(ConfigError, match="outside the run directory"):
            outside.draw(np.random.default_rng(0))
    assert not marker.exists()


def test_resume_refuses_a_run_whose_pool_points_outside(evil, tmp_path, capsys):
    """A shared run directory whose pool.json names a file elsewhere: --resume stops with a
    clear error before loading anything."""
    from tests.training.test_training_smoke import tiny

    data_zip, _, marker = evil
    run = tmp_path / "run"
    from training.train import train

    train(config_from_dict(tiny("kentucky_derby", run, total_timesteps=256)), progress=False)
    pool = json.loads((run / "pool.json").read_text())
    pool["snapshots"] = [{"path": str(data_zip), "step": 0}]
    (run / "pool.json").write_text(json.dumps(pool))
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump(tiny("kentucky_derby", run, total_timesteps=512)))
    assert main(["train", "--config", str(cfg), "--resume", "--no-progress"]) == 2
    assert "outside the run directory" in capsys.readouterr().err
    assert not marker.exists()


@pytest.mark.parametrize("path", PRETRAINED, ids=lambda p: p.stem)
def test_shipped_policies_play_as_with_the_full_load(path):
    """The safe loader rebuilds exactly sb3's network: identical weights, identical actions on
    a few hundred observations of real games (with the hint agent where there is one)."""
    sidecar = json.loads(path.with_suffix(".json").read_text())
    game = make_game(sidecar["game"], **sidecar["params"])
    safe = PPOPolicy.load(path, game)
    full = PPOPolicy.from_model(MaskablePPO.load(path, device="cpu"), game)
    assert len(safe._layers) == len(full._layers)
    for (w1, b1, a1), (w2, b2, a2) in zip(safe._layers, full._layers, strict=True):
        assert np.array_equal(w1, w2) and np.array_equal(b1, b2) and a1 == a2
    decisions, differ = 0, 0
    for seed in range(20):
        state = game.new_initial_state(seed)
        rng = np.random.default_rng(seed)
        while not state.is_terminal() and decisions < 300 * (seed + 1) / 20:
            p = state.current_players()[0]
            a = choose(safe, state, p, np.random.default_rng([seed, decisions]))
            b = choose(full, state, p, np.random.default_rng([seed, decisions]))
            differ += a != b
            decisions += 1
            state.apply_action(
                p, a if rng.random() < 0.5 else int(rng.choice(state.legal_actions(p)))
            )
    assert decisions >= 250 and differ == 0


def test_residual_checkpoint_loads_safely(tmp_path):
    from agents.registry import make_policy
    from agents.residual import ResidualMaskablePolicy
    from training.train import HintWrapper, env_class

    game = make_game("derby", num_players=4)
    env = HintWrapper(
        env_class("derby")(num_players=4), make_policy("derby_exchange", game), "values"
    )
    model = MaskablePPO(
        ResidualMaskablePolicy, env, device="cpu", seed=0,
        policy_kwargs={"net_arch": [32], "prior_dim": game.num_actions, "prior_scale": 20.0,
                       "activation_fn": torch.nn.ReLU},
    )  # fmt: skip
    with torch.no_grad():
        for p in model.policy.parameters():
            p.normal_(0.0, 0.3)
    model.derby_meta = {"game": "derby", "hint": "derby_exchange", "hint_features": "values"}
    model.save(tmp_path / "res.zip")
    info = read_checkpoint(tmp_path / "res.zip")
    assert (info.net_arch, info.activation, info.prior_dim) == ((32,), "ReLU", game.num_actions)
    safe = PPOPolicy.load(tmp_path / "res.zip", game)
    live = PPOPolicy.from_model(model, game)
    rng = np.random.default_rng(0)
    for _ in range(50):
        x = rng.uniform(-1, 1, game.observation_size + game.num_actions).astype(np.float32)
        assert np.allclose(safe.logits(x), live.logits(x), atol=1e-6)


def _rewrite(src: Path, dest: Path, data_fn=None, weights_fn=None, extra=None) -> Path:
    with zipfile.ZipFile(src) as z, zipfile.ZipFile(dest, "w") as out:
        for item in z.infolist():
            body = z.read(item)
            if item.filename == "data" and data_fn is not None:
                d = json.loads(body)
                data_fn(d)
                body = json.dumps(d).encode()
            if item.filename == "policy.pth" and weights_fn is not None:
                sd = torch.load(io.BytesIO(body), weights_only=True)
                weights_fn(sd)
                buf = io.BytesIO()
                torch.save(sd, buf)
                body = buf.getvalue()
            out.writestr(item.filename, body)
        for name, body in (extra or {}).items():
            out.writestr(name, body)
    return dest


def _set(path: str, value):
    def fn(d):
        node = d
        *parents, last = path.split("/")
        for p in parents:
            node = node[p]
        node[last] = value

    return fn


@pytest.mark.parametrize(
    ("data_fn", "weights_fn", "extra", "message"),
    [
        (_set("policy_class/__module__", "evil.module"), None, None, "policy class comes from module 'evil.module'"),
        (_set("policy_kwargs/activation_fn", "<class 'os.system'>"), None, None, "activation .* is not supported"),
        (_set("policy_kwargs/features_extractor_class", "<class 'x.Y'>"), None, None, "features extractor"),
        (_set("policy_kwargs/net_arch", [64, 32]), None, None, r"layer 1 has weights \(64, 64\)"),
        (_set("policy_kwargs/net_arch", "big"), None, None, "net_arch 'big' is not a list"),
        (_set("observation_space/_shape", [75, 2]), None, None, "observation shape"),
        (_set("action_space/n", "many"), None, None, "is not an integer"),
        (_set("num_timesteps", -5), None, None, "num_timesteps -5"),
        (_set("derby_meta", "x"), None, None, "derby_meta is not plain JSON"),
        (_set("derby_meta/game", 7), None, None, r"derby_meta\['game'\] = 7"),
        (_set("policy_class/:serialized:", "%%%"), None, None, "malformed serialized value"),
        (None, lambda sd: sd.pop("action_net.bias"), None, "'action_net.bias' is missing"),
        (None, lambda sd: sd.__setitem__("action_net.bias", torch.full((16,), float("nan"))), None, "NaN"),
        (None, lambda sd: sd.__setitem__("evil.weight", torch.zeros(1)), None, "unexpected parameters"),
        (None, lambda sd: sd.__setitem__("action_net.bias", torch.zeros(16, dtype=torch.int64)), None, "not a dense float"),
        (None, None, {"payload.py": "print(1)"}, r"unexpected entries \['payload.py'\]"),
    ],
)  # fmt: skip
def test_unexpected_contents_are_refused_naming_the_file(
    tmp_path, data_fn, weights_fn, extra, message
):
    bad = _rewrite(KD5, tmp_path / "odd.zip", data_fn, weights_fn, extra)
    with pytest.raises(CheckpointError, match=message) as info:
        PPOPolicy.load(bad, make_game("kentucky_derby", num_players=5))
    assert "odd.zip" in str(info.value)


def test_pickle_globals_reads_opcodes_only():
    import pickle

    blob = pickle.dumps(_Payload(Path("/nonexistent/never")))
    assert ("builtins", "exec") in pickle_globals(blob)
    assert pickle_globals(pickle.dumps({"a": [1, 2.0, "x"]})) == []


# ----- replays and YAML are data too -------------------------------------------------------
def test_replays_are_plain_json_and_a_pickle_in_one_is_refused(tmp_path):
    from training.tools.replay import Recorder, ReplayError, load_replay

    game = make_game("kentucky_derby", num_players=3)
    state = game.new_initial_state(5)
    rec = Recorder(game, 5, state, ["random"] * 3)
    rng = np.random.default_rng(0)
    for _ in range(6):
        p = state.current_players()[0]
        a = int(rng.choice(state.legal_actions(p)))
        name = state.action_to_string(p, a)
        state.apply_action(p, a)
        rec.step(state, p, a, name)
    path = rec.save(tmp_path / "r.json")
    data = json.loads(Path(path).read_text())  # plain JSON: no pickle, no type tags

    def walk(x):
        if isinstance(x, dict):
            for k, v in x.items():
                assert isinstance(k, str)
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)
        else:
            assert x is None or isinstance(x, bool | int | float | str)

    walk(data)
    assert len(load_replay(path)) == 6
    # a pickle (or anything not JSON) in place of the replay is an error, never loaded
    marker = tmp_path / "PWNED"
    (tmp_path / "evil.json").write_bytes(__import__("pickle").dumps(_Payload(marker)))
    with pytest.raises(ReplayError):
        load_replay(tmp_path / "evil.json")
    assert not marker.exists()


def test_yaml_configs_refuse_python_tags(tmp_path):
    marker = tmp_path / "PWNED"
    cfg = tmp_path / "evil.yaml"
    cfg.write_text(
        "game: kentucky_derby\n"
        f"name: !!python/object/apply:builtins.exec [\"open({str(marker)!r}, 'w')\"]\n"
    )
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(cfg)
    with pytest.raises(ConfigError, match="bad value"):
        load_config(
            ROOT / "configs" / "smoke" / "kentucky_derby.yaml",
            [f"name=!!python/object/apply:builtins.exec [\"open({str(marker)!r}, 'w')\"]"],
        )
    assert not marker.exists()


# ----- mutation probe: every damaged file is a CheckpointError, never a raw traceback ----------
ODD_VALUES = [None, -1, 0, 2**70, 1.5, float("inf"), True, "", "x", [], [1, -2], {}, {"a": 1}]


def _mutants(rng: np.random.Generator, count: int, tmp: Path) -> list[Path]:
    """Damaged copies of a checkpoint: flipped bytes anywhere in the archive, top-level and
    first-level metadata fields set to odd values, tensors reshaped or retyped."""
    raw = KD5.read_bytes()
    with zipfile.ZipFile(KD5) as z:
        data = json.loads(z.read("data"))
        weights = torch.load(io.BytesIO(z.read("policy.pth")), weights_only=True)
    out = []
    for i in range(count):
        kind = i % 3
        dest = tmp / f"m{i}.zip"
        if kind == 0:
            body = bytearray(raw)
            for pos in rng.integers(0, len(body), size=int(rng.integers(1, 8))):
                body[pos] ^= int(rng.integers(1, 256))
            dest.write_bytes(bytes(body))
        elif kind == 1:
            d = json.loads(json.dumps(data))
            key = list(d)[int(rng.integers(len(d)))]
            if isinstance(d[key], dict) and d[key] and rng.random() < 0.6:
                sub = list(d[key])[int(rng.integers(len(d[key])))]
                d[key][sub] = ODD_VALUES[int(rng.integers(len(ODD_VALUES)))]
            else:
                d[key] = ODD_VALUES[int(rng.integers(len(ODD_VALUES)))]
            _rewrite(KD5, dest, data_fn=lambda x, d=d: (x.clear(), x.update(d)))
        else:
            sd = dict(weights)
            key = list(sd)[int(rng.integers(len(sd)))]
            choice = int(rng.integers(4))
            sd[key] = [
                torch.zeros(3, 3),
                sd[key].to(torch.float64),
                torch.zeros(sd[key].shape, dtype=torch.int32),
                sd[key].flatten()[:-1] if sd[key].numel() > 1 else torch.zeros(2),
            ][choice]
            _rewrite(KD5, dest, weights_fn=lambda x, sd=sd: (x.clear(), x.update(sd)))
        out.append(dest)
    return out


def _probe(count: int, seed: int, tmp: Path) -> dict[str, int]:
    game = make_game("kentucky_derby", num_players=5)
    tally = {"loaded": 0, "CheckpointError": 0, "other": 0}
    others = []
    for path in _mutants(np.random.default_rng(seed), count, tmp):
        try:
            policy = PPOPolicy.load(path, game)
            obs = game.new_initial_state(0).observation(0)
            assert np.isfinite(policy.logits(obs)).all()
            tally["loaded"] += 1
        except CheckpointError as exc:
            assert path.name in str(exc)
            tally["CheckpointError"] += 1
        except Exception as exc:  # a raw traceback: what this probe exists to find
            tally["other"] += 1
            others.append(f"{path.name}: {type(exc).__name__}: {exc}")
    print(f"checkpoint mutation probe ({count} files): {tally}")
    assert not others, others[:5]
    return tally


def test_mutated_checkpoints_get_clear_errors(tmp_path):
    tally = _probe(90, 0, tmp_path)
    assert tally["CheckpointError"] >= 45  # the probe does damage files


@pytest.mark.slow
def test_mutated_checkpoints_get_clear_errors_long(tmp_path):
    tally = _probe(900, 1, tmp_path)
    assert tally["CheckpointError"] >= 450


def test_resume_never_runs_a_payload_planted_in_the_run_dir(tmp_path, capsys):
    """Resume restores checkpoints without unpickling: a planted payload in the newest
    checkpoint makes it 'damaged' (skipped, kept as *.corrupt); in all of them, resume stops."""
    from tests.training.test_training_smoke import tiny
    from training.train import checkpoints, train

    marker = tmp_path / "PWNED"
    run = tmp_path / "run"
    raw = tiny("kentucky_derby", run, total_timesteps=512, **{"checkpoint.every": 256})
    train(config_from_dict(raw), progress=False)
    (s1, older), (s2, newest) = checkpoints(run)
    planted = evil_data_zip(tmp_path / "x.zip", marker, src=newest)
    planted.replace(newest)
    train(config_from_dict({**raw, "total_timesteps": 768}), resume=True, progress=False)
    err = capsys.readouterr().err
    assert "skipping a damaged checkpoint" in err and "builtins.exec" in err
    assert checkpoints(run)[-1][0] == 768
    for _, path in checkpoints(run):
        evil_data_zip(tmp_path / "y.zip", marker, src=path).replace(path)
    with pytest.raises(ConfigError, match="no intact checkpoint"):
        train(config_from_dict({**raw, "total_timesteps": 1024}), resume=True, progress=False)
    assert not marker.exists()


def test_a_run_config_with_python_tags_is_refused_on_resume(tmp_path):
    from training.train import load_run_config

    marker = tmp_path / "PWNED"
    (tmp_path / "config.yaml").write_text(
        f"!!python/object/apply:builtins.exec [\"open({str(marker)!r}, 'w')\"]\n"
    )
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_run_config(tmp_path)
    (tmp_path / "config.yaml").write_text("")
    with pytest.raises(ConfigError, match="not a training config"):
        load_run_config(tmp_path)
    assert not marker.exists()
