"""Files people hand relay_nb are bounded before anything is built from them (issue 38, item 2).

The payload class: YAML aliases that expand (the "billion laughs"), nesting that recurses,
files far larger than their kind. Each payload is first shown harmful through the plain
library (PyYAML builds it, and the first walk over it — serialising, validating, copying —
expands a few hundred bytes into millions of values); then every reader of every kind of file
— knowledge (YAML and a dbt manifest), question banks (YAML, JSON, JSONL), config, OpenAPI
documents, model scripts, and the knowledge file ``--verify`` appends to — refuses it in one
line that names the file and the bound, at once, before building it.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import yaml

from relay_nb.errors import ConfigurationError
from relay_nb.untrusted import KNOWLEDGE, load_json, load_yaml


def laughs(levels: int, fan_out: int = 10) -> str:
    """``a0: &a0 [x, x, …]`` then each level a list of ``fan_out`` aliases of the one before:
    ``fan_out ** levels`` values from a few hundred bytes."""
    lines = [f"a0: &a0 [{', '.join(['lol'] * fan_out)}]"]
    for level in range(1, levels + 1):
        lines.append(f"a{level}: &a{level} [{', '.join([f'*a{level - 1}'] * fan_out)}]")
    return "\n".join(lines) + "\n"


BOMB = laughs(7)
"""10 million values from 1 KB: past every bound."""
DEEP_JSON = "[" * 200 + "]" * 200


def test_the_payload_is_harmful_through_the_plain_library() -> None:
    small = laughs(5)  # 100,000 values: enough to see the class, quick to show
    assert len(small) < 600
    data = yaml.safe_load(small)
    expanded = json.dumps(data)  # the first walk expands every alias
    assert expanded.count("lol") >= 100_000 and len(expanded) > 500 * len(small)


def test_the_bounded_loader_refuses_before_building_and_keeps_what_is_fine() -> None:
    started = time.perf_counter()
    with pytest.raises(ConfigurationError, match=r"bomb\.yaml line \d+: expands to more than"):
        load_yaml(BOMB, where="bomb.yaml", bounds=KNOWLEDGE)
    assert time.perf_counter() - started < 1.0
    with pytest.raises(ConfigurationError, match="a value that contains itself"):
        load_yaml("a: &x [1, *x]\n", where="self.yaml", bounds=KNOWLEDGE)
    with pytest.raises(ConfigurationError, match="nested more than 64 levels"):
        load_yaml("a: " + "[" * 80 + "]" * 80, where="deep.yaml", bounds=KNOWLEDGE)
    with pytest.raises(ConfigurationError, match="nested more than 64 levels"):
        load_json(DEEP_JSON, where="deep.json", bounds=KNOWLEDGE)
    # aliases used as people use them (a shared default), and merge keys, still load
    data, node = load_yaml(
        "base: &base {schema: sales, owner: bi}\nt1: {<<: *base, name: a}\nt2: *base\n",
        where="ok.yaml",
        bounds=KNOWLEDGE,
    )
    assert data["t1"] == {"schema": "sales", "owner": "bi", "name": "a"} and node is not None
    assert load_yaml("", where="empty.yaml", bounds=KNOWLEDGE) == (None, None)


def test_every_reader_refuses_the_bomb(tmp_path: Path) -> None:
    from relay_nb.connectors.http.openapi import parse_document
    from relay_nb.eval.bank import load_bank
    from relay_nb.knowledge import load_knowledge

    knowledge = tmp_path / "shop.knowledge.yaml"
    knowledge.write_text(BOMB)
    bank = tmp_path / "bank.yaml"
    bank.write_text(BOMB + "questions: []\n")
    for load, path in ((load_knowledge, knowledge), (load_bank, bank)):
        started = time.perf_counter()
        with pytest.raises(ConfigurationError, match=f"{path.name} line .*expands to more"):
            load(path)
        assert time.perf_counter() - started < 1.0
    with pytest.raises(ConfigurationError, match=r"OpenAPI document api\.yaml line .*expands"):
        parse_document(BOMB.encode(), source="api.yaml")


def test_verify_does_not_append_to_a_bomb(tmp_path: Path) -> None:
    from relay_nb.knowledge.model import VerifiedQuery
    from relay_nb.knowledge.save import append_verified

    path = tmp_path / "shop.knowledge.yaml"
    path.write_text(BOMB)
    query = VerifiedQuery(question="how many?", sql="SELECT COUNT(*) FROM orders")
    with pytest.raises(ConfigurationError, match="expands to more than"):
        append_verified(path, query)
    assert path.read_text() == BOMB  # untouched


def test_deep_json_is_refused_in_banks_configs_and_scripts(tmp_path: Path) -> None:
    from relay_nb.eval.bank import load_bank
    from relay_nb.facade.config import load_config
    from relay_nb.runtime.scripted import ScriptedRuntime

    for name in ("bank.json", "bank.jsonl", "relay.config.json", "script.json"):
        (tmp_path / name).write_text(DEEP_JSON + "\n")
    for call, name in (
        (load_bank, "bank.json"),
        (load_bank, "bank.jsonl"),
        (load_config, "relay.config.json"),
        (ScriptedRuntime.from_file, "script.json"),
    ):
        with pytest.raises(ConfigurationError, match="nested more than"):
            call(tmp_path / name)


def test_files_far_larger_than_their_kind_are_not_read(tmp_path: Path) -> None:
    from relay_nb.eval.bank import load_bank
    from relay_nb.facade.config import load_config
    from relay_nb.knowledge import load_knowledge

    config = tmp_path / "relay.config.json"
    config.write_text('{"connectors": [], "padding": "' + "x" * (2 * 2**20) + '"}')
    with pytest.raises(ConfigurationError, match=r"config file 'relay.config.json' is 2\.0 MiB"):
        load_config(config)
    big = tmp_path / "huge.knowledge.yaml"
    with big.open("w") as file:  # 17 MiB: past a knowledge file's 16
        file.write("# " + "x" * (17 * 2**20) + "\n")
    with pytest.raises(ConfigurationError, match=r"more than the 16\.0 MiB a knowledge file"):
        load_knowledge(big)
    big_json = tmp_path / "huge.json"  # a .json that is no dbt manifest: a knowledge file
    big_json.write_text('{"tables": {}, "x": "' + "x" * (17 * 2**20) + '"}')
    with pytest.raises(ConfigurationError, match=r"more than the 16\.0 MiB"):
        load_knowledge(big_json)
    bank = tmp_path / "big.yaml"
    bank.write_text("questions: []\n# " + "x" * (17 * 2**20) + "\n")
    with pytest.raises(ConfigurationError, match=r"question bank 'big\.yaml' is 17\.0 MiB"):
        load_bank(bank)
