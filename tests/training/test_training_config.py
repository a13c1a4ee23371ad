"""The training config schema: bad keys and values fail fast, naming the key."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from training.cli import main
from training.train.config import ConfigError, config_from_dict, describe, load_config

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = sorted((ROOT / "configs").rglob("*.yaml"))


def test_every_shipped_config_validates():
    """Each shipped config validates with its backend's loader (``backend: rllib`` configs
    with training.train.rllib_config, the others with the MaskablePPO schema)."""
    import yaml

    from training.train.rllib_config import is_rllib_config, load_rllib_config

    assert len(CONFIGS) >= 5
    games = set()
    for path in CONFIGS:
        if is_rllib_config(yaml.safe_load(path.read_text())):
            load_rllib_config(path)
            continue
        cfg = load_config(path)
        games.add((cfg.game, cfg.num_players))
    assert ("kentucky_derby", 5) in games and len(games) >= 4


@pytest.mark.parametrize(
    ("raw", "pattern"),
    [
        ({"gmae": "kentucky_derby"}, r"unknown config key 'gmae' \(did you mean 'game'\?\)"),
        ({"ppo": {"learning_rat": 1e-3}}, r"'ppo\.learning_rat' \(did you mean 'ppo\.learning_rate'"),
        ({"opponents": {"self_play": {"evry": 10}}}, r"'opponents\.self_play\.evry'.*'opponents\.self_play\.every'"),
        ({"ppo": {"learning_rate": "fast"}}, r"config key 'ppo\.learning_rate': got 'fast', expected a number"),
        ({"n_envs": 0}, r"config key 'n_envs': got 0, expected an integer in \[1, 65536\]"),
        ({"n_envs": True}, r"config key 'n_envs': got True"),
        ({"vec_env": "threads"}, r"config key 'vec_env': got 'threads', expected one of 'dummy', 'subproc'"),
        ({"ppo": {"net_arch": [64, -1]}}, r"config key 'ppo\.net_arch\[1\]': got -1"),
        ({"game": "kentuky_derby"}, r"config key 'game': unknown game 'kentuky_derby' \(did you mean 'kentucky_derby'\?\)"),
        ({"game_params": {"num_players": 11}}, r"config key 'game_params': parameter 'num_players': got 11"),
        ({"game_params": {"num_player": 5}}, r"config key 'game_params': unknown parameter 'num_player'.*did you mean 'num_players'"),
        ({"reward_mode": "money"}, r"config key 'reward_mode': got 'money', expected one of 'win', 'chips'"),
        ({"learner_seat": 4}, r"config key 'learner_seat': got 4"),
        ({"opponents": {"pool": [{"agent": "kd_valeu"}]}}, r"'opponents\.pool\[0\]\.agent': unknown agent 'kd_valeu'.*did you mean 'kd_value'"),
        ({"opponents": {"pool": [{"weight": 2}]}}, r"config key 'opponents\.pool\[0\]\.agent' is required"),
        ({"opponents": {"pool": [{"agent": "random", "wieght": 2}]}}, r"'opponents\.pool\[0\]\.wieght' \(did you mean 'opponents\.pool\[0\]\.weight'"),
        ({"opponents": {"pool": [{"agent": "random", "weight": -1}]}}, r"'opponents\.pool\[0\]\.weight': got -1"),
        ({"opponents": {"pool": [{"agent": "search", "params": {"rolouts": 2}}]}}, r"'opponents\.pool\[0\]\.params'.*rolouts"),
        ({"opponents": {"pool": [{"agent": "missing.zip"}]}}, r"'opponents\.pool\[0\]\.agent': no such checkpoint file"),
        ({"opponents": {"pool": []}}, r"'opponents\.pool': expected at least one member"),
        ({"ppo": {"n_steps": 16, "batch_size": 512}, "n_envs": 2}, r"'ppo\.batch_size': got 512, expected at most"),
        ({"evaluation": {"fields": ["kd_value", "nobody"]}}, r"'evaluation\.fields\[1\]': unknown agent 'nobody'"),
        ({"ppo": "fast"}, r"config key 'ppo': expected a mapping"),
        ({"hint": "kd_valu"}, r"config key 'hint': got 'kd_valu' \(did you mean 'kd_value'\?\)"),
        ({"pretrain": {"agent": "kd_vale"}}, r"config key 'pretrain\.agent': got 'kd_vale' \(did you mean"),
        ({"pretrain": {"agent": "kd_value", "step": 5}}, r"'pretrain\.step' \(did you mean 'pretrain\.steps'"),
        ({"name": "a/b"}, r"config key 'name'"),
        ({"hint": "kd_value", "hint_features": "values"}, r"config key 'hint_features': 'kd_value' gives no action values"),
        ({"hint_features": "logits"}, r"config key 'hint_features': got 'logits', expected one of 'action', 'values'"),
        ({"ppo": {"residual_scale": 20}}, r"config key 'ppo\.residual_scale': a residual policy needs a hint agent"),
        ({"ppo": {"residual_scale": 0}}, r"config key 'ppo\.residual_scale': got 0"),
        ({"logging": {"progress_bar": 1}}, r"config key 'logging\.progress_bar': got 1, expected true/false"),
        ({"n_envs": 4.0}, r"config key 'n_envs': got 4\.0, expected an integer"),
        ({"ppo": {"gamma": float("inf")}}, r"config key 'ppo\.gamma': got inf, expected a number in \[0, 1\] \(a finite value\)"),
        ({"opponents": {"self_play": {"sampling": "newest"}}}, r"'opponents\.self_play\.sampling': got 'newest', expected one of 'uniform', 'recent'"),
    ],
)  # fmt: skip
def test_bad_config_names_the_key(raw, pattern):
    with pytest.raises(ConfigError, match=pattern):
        config_from_dict(raw)


def test_bad_config_fails_before_any_work(tmp_path, capsys):
    run_dir = tmp_path / "run"
    cfg = tmp_path / "bad.yaml"
    cfg.write_text(f"game: kentucky_derby\nrun_dir: {run_dir}\nppo:\n  n_epoch: 3\n")
    assert main(["train", "--config", str(cfg), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "unknown config key 'ppo.n_epoch' (did you mean 'ppo.n_epochs'?)" in err
    assert str(cfg) in err
    assert not run_dir.exists()  # nothing was created


def test_cli_overrides_are_validated(tmp_path, capsys):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("game: kentucky_derby\n")
    assert main(["train", "--config", str(cfg), "--set", "ppo.gamma=2"]) == 2
    assert "config key 'ppo.gamma': got 2, expected a number in [0, 1]" in capsys.readouterr().err
    assert main(["train", "--config", str(cfg), "--set", "ppo.gama=0.5"]) == 2
    assert "did you mean 'ppo.gamma'" in capsys.readouterr().err


def test_exponent_without_a_dot_is_a_number():
    # YAML 1.1 (PyYAML) reads 1e-3 as a string; a float key accepts it as the number it is
    assert config_from_dict({"ppo": {"learning_rate": "1e-3"}}).ppo.learning_rate == 0.001
    with pytest.raises(ConfigError, match="'ppo.learning_rate': got 'nan'"):
        config_from_dict({"ppo": {"learning_rate": "nan"}})
    with pytest.raises(ConfigError, match="'n_envs': got '4'"):
        config_from_dict({"n_envs": "4"})


def test_config_file_errors(tmp_path):
    with pytest.raises(ConfigError, match="no such config file"):
        load_config(tmp_path / "nope.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("game: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(bad)
    bad.write_text("- a list\n")
    with pytest.raises(ConfigError, match="mapping"):
        load_config(bad)


def test_docs_reference_lists_every_key():
    doc = (ROOT / "docs" / "training.md").read_text()
    keys = re.findall(r"^\| `([^`]+)` \|", describe(), flags=re.M)
    assert len(keys) > 30
    missing = [k for k in keys if f"`{k}`" not in doc]
    assert not missing, f"docs/training.md does not document {missing}"
