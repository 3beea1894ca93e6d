"""Tree JSON (hierviz.hierarchy.io): the four forms told apart, strict reading, writing, any depth."""

from __future__ import annotations

import json
import random

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from hierviz.hierarchy import (
    LabelTree,
    detect_tree_form,
    dumps_tree_json,
    parse_tree_json,
    read_tree_file,
    tree_from_obj,
    tree_to_obj,
    write_tree_file,
)
from hierviz.hierarchy.io import _loads_iterative
from tests.conftest import UNBALANCED


def _write(tmp_path, name, text, encoding="utf-8"):
    p = tmp_path / name
    p.write_bytes(text.encode(encoding) if isinstance(text, str) else text)
    return p


# --------------------------------------------------------------------------- the four forms
def test_plain_parent_map_json_is_read_without_flags(tmp_path):
    p = _write(tmp_path, "pm.json", '{"x": "a", "y": "a", "z": "b", "a": "root", "b": "root"}')
    t = LabelTree.from_json(p)
    assert t.leaves == ["x", "y", "z"] and t.parent("a") == "root" and t.name == "pm"
    assert tree_from_obj(read_tree_file(p)) == t
    assert LabelTree.from_dict({"x": "a", "y": "a", "z": "b", "a": "root", "b": "root"}) == t


@pytest.mark.parametrize(
    "text, form, leaves",
    [
        ('{"x": "a", "y": "a", "z": "root", "a": "root"}', "parents", ["x", "y", "z"]),
        ('{"root": null, "x": "root", "y": "root"}', "parents", ["x", "y"]),  # null marks the root
        ('{"oak": "tree", "fir": "tree", "tree": "plant"}', "parents", ["oak", "fir"]),  # form keys as node names
        ('{"root": {"a": ["x", "y"], "b": ["z"]}}', "nested", ["x", "y", "z"]),
        ('{"root": [{"a": ["x"]}, "y"]}', "nested", ["x", "y"]),
        ('[["root", "a", "x"], ["root", "a", "y"], ["root", "b", "z"]]', "paths", ["x", "y", "z"]),
        (
            '{"name": "t", "tree": {"root": {"a": ["x", "y"], "b": ["z"]}}, "leaf_order": ["z", "y", "x"]}',
            "full",
            ["z", "y", "x"],
        ),
        ('{"parents": {"x": "a", "y": "a", "z": "root", "a": "root"}}', "full", ["x", "y", "z"]),
        ('{"paths": [["r", "x"], ["r", "y"]], "source": "me"}', "full", ["x", "y"]),
    ],
)
def test_every_json_form_is_told_apart(tmp_path, text, form, leaves):
    assert detect_tree_form(json.loads(text)) == form
    assert LabelTree.from_json(_write(tmp_path, "t.json", text)).leaves == leaves


def test_full_form_wins_for_a_root_named_tree_and_wrapping_disambiguates():
    # {"tree": {...}} is the full form (documented); wrap a nested dict whose root is called "tree".
    assert tree_from_obj({"tree": {"r": ["x", "y"]}}).root == "r"
    assert tree_from_obj({"tree": {"tree": {"a": ["x"], "b": ["y"]}}}).root == "tree"
    # A full-form key with a misspelt neighbour is still the full form, so the typo is named.
    with pytest.raises(ValueError, match=r"^f\.json: obj has unknown keys 'leaf_oder'"):
        tree_from_obj({"tree": {"r": ["x"]}, "leaf_oder": ["x"]}, where="f.json")


@pytest.mark.parametrize(
    "text, got",
    [
        ("3", r"got int 3$"),
        ('"root"', r"got str 'root'$"),
        ("{}", r"got an empty object \{\}$"),
        ('{"x": "a", "a": {"y": null}}', r"got an object whose values mix dict, str$"),
        (
            '{"x": ["a", "b"], "a": "root", "b": "root"}',
            r"mix list, str \(a parent map with several parents.*"
            r'"dag_to_tree": true\}\)$',
        ),
        ('{"x": "a", "a": 3}', r"mix int, str$"),
    ],
)
def test_an_object_fitting_no_form_is_one_line_listing_the_four_forms(tmp_path, text, got):
    p = _write(tmp_path, "odd.json", text)
    with pytest.raises(ValueError) as info:
        LabelTree.from_json(p)
    msg = str(info.value)
    assert "\n" not in msg and msg.startswith(f"{p}: expected a parent map ")
    for form in ('{"child": "parent", ...}', "a nested dict", "a list of root-to-leaf paths", "the full form"):
        assert form in msg
    assert pytest.raises(ValueError, tree_from_obj, json.loads(text), where="odd.json").match(got)


def test_a_paths_list_names_its_bad_entry(tmp_path):
    p = _write(tmp_path, "p.json", '["root/a/x", "root/a/y"]')
    with pytest.raises(
        ValueError,
        match=r"p\.json: paths\[0\] must be a sequence of names, got str 'root/a/x' "
        r"\(write each path as a list of names",
    ):
        LabelTree.from_json(p)


def test_tree_from_obj_default_where_and_name():
    with pytest.raises(ValueError, match=r"^<source>: two roots: 'a', 'b'"):
        tree_from_obj({"x": "a", "y": "b"})
    t = tree_from_obj([["r", "x"]], name="mine")
    assert t.name == "mine" and tree_from_obj({"name": "own", "paths": [["r", "x"]]}, name="mine").name == "own"


# --------------------------------------------------------------------------- clean failures
def test_duplicate_json_keys_are_refused_naming_file_and_key(tmp_path):
    p = _write(tmp_path, "dup.json", '{"root": {\n  "a": ["x"],\n  "a": ["y"]\n}}')
    with pytest.raises(
        ValueError,
        match=r"dup\.json: key 'a' appears twice in one JSON object \(line 3, column 3\); a repeated key "
        "silently drops a subtree",
    ):
        LabelTree.from_json(p)
    # The key also appears earlier as a value: the position is still that of the repeated key.
    p2 = _write(tmp_path, "dup2.json", '{"x": "a",\n "a": "root",\n "y": "a",\n "a": "r2"}')
    with pytest.raises(ValueError, match=r"dup2\.json: key 'a' appears twice in one JSON object \(line 4, column 2\)"):
        read_tree_file(p2)
    # Two different objects may use the same key: only a repeat within one object is refused.
    p3 = _write(tmp_path, "ok.json", '{"root": {"a": {"m": ["x"]}, "b": {"n": ["y"]}}, "q": null}')
    assert read_tree_file(p3)["q"] is None


def test_string_boolean_is_refused(tmp_path):
    p = _write(tmp_path, "dag.json", '{"parents": {"x": ["a", "b"], "a": "root", "b": "root"}, "dag_to_tree": "false"}')
    with pytest.raises(
        ValueError, match=r'dag\.json: dag_to_tree must be a JSON boolean \(true/false\), got the string "false"'
    ):
        LabelTree.from_json(p)
    with pytest.raises(ValueError, match=r"dag_to_tree must be a JSON boolean \(true/false\), got the number 0"):
        LabelTree.from_dict({"parents": {"x": "r"}, "dag_to_tree": 0})
    with pytest.raises(ValueError, match=r"dag_to_tree must be a JSON boolean \(true/false\), got null"):
        tree_from_obj({"parents": {"x": "r"}, "dag_to_tree": None})
    ok = _write(
        tmp_path, "ok.json", '{"parents": {"x": ["a", "b"], "a": "root", "b": "root", "y": "b"}, "dag_to_tree": true}'
    )
    assert LabelTree.from_json(ok).parent("x") == "a"


def test_non_utf8_invalid_json_and_missing_files_name_the_file(tmp_path):
    bad = _write(tmp_path, "latin.json", '{"root": ["caf\u00e9", "b"]}', encoding="latin-1")
    with pytest.raises(ValueError, match=r"latin\.json: not UTF-8 \(byte 14: .*\); a tree file must be UTF-8 JSON"):
        LabelTree.from_json(bad)
    bom = _write(tmp_path, "bom.json", '\ufeff{"root": ["caf\u00e9", "b"]}')
    assert LabelTree.from_json(bom).leaves == ["caf\u00e9", "b"]
    broken = _write(tmp_path, "broken.json", '{"root": [\n  "a"\n  "b"\n]}')
    with pytest.raises(
        ValueError, match=r"broken\.json: not valid JSON at line 3, column 3 \(Expecting ',' delimiter\)"
    ):
        LabelTree.from_json(broken)
    with pytest.raises(FileNotFoundError, match=r"missing\.json: no such tree file"):
        LabelTree.from_json(tmp_path / "missing.json")
    with pytest.raises(FileNotFoundError, match=r"missing\.json: no such tree file"):
        read_tree_file(tmp_path / "missing.json")
    with pytest.raises(ValueError, match=r"^t\.json: not UTF-8"):
        parse_tree_json(b"\xff{}", where="t.json")


# --------------------------------------------------------------------------- the iterative reader and writer
TEXTS = [
    '{"a": [1, -2.5, 3e2, true, false, null, "\\u00e9\\n"], "b": {}, "c": [], "d": {"e": [[], [{}]]}}',
    " [ ] ",
    '"x"',
    '{"k": NaN, "m": -Infinity}',
    '  {"a" : 1 ,  "b":[ 1 , 2 ] }  ',
]
BAD_TEXTS = ['{"a" 1}', "[1 2]", '{"a": [1, 2}', '{"a": 1} x', "", "{a: 1}", "[1, tru]", '{"a": "x']


@pytest.mark.parametrize("text", TEXTS)
def test_iterative_reader_matches_json(text):
    want = json.loads(text)
    got = _loads_iterative(text)
    assert json.dumps(got) == json.dumps(want)


@pytest.mark.parametrize("text", BAD_TEXTS)
def test_iterative_reader_errors_like_json(text):
    with pytest.raises(json.JSONDecodeError) as want:
        json.loads(text)
    with pytest.raises(json.JSONDecodeError) as got:
        _loads_iterative(text)
    assert (got.value.msg, got.value.lineno, got.value.colno) == (want.value.msg, want.value.lineno, want.value.colno)


@pytest.mark.parametrize("obj", [json.loads(t) for t in TEXTS[:3]] + [UNBALANCED, {"é": ["ü"]}, [], {}, None, 1.5])
def test_writer_matches_json_dumps(obj):
    assert dumps_tree_json(obj) == json.dumps(obj, indent=2, ensure_ascii=False)


def test_to_json_writes_what_0_1_wrote(unbalanced_tree, tmp_path):
    t = unbalanced_tree.with_leaf_order(["c", "v", "z", "x", "u", "y"])
    t.name, t.source = "unbalanced", "tests/conftest.py"
    p = tmp_path / "t.json"
    t.to_json(p)
    assert p.read_text(encoding="utf-8") == json.dumps(t.to_dict(), indent=2, ensure_ascii=False) + "\n"
    assert t.to_dict()["leaf_order"] == ["c", "v", "z", "x", "u", "y"] and t.to_dict()["name"] == "unbalanced"
    assert unbalanced_tree.to_dict()["tree"] == UNBALANCED  # lists for all-leaf children, None for a leaf
    with pytest.raises(ValueError, match=r"form must be one of full, parents, nested, paths; got 'yaml'"):
        t.to_json(p, form="yaml")
    with pytest.raises(ValueError, match=r"no_dir[/\\]t\.json: cannot write the tree file"):
        write_tree_file(t, tmp_path / "no_dir" / "t.json")


def _chain(depth):
    return LabelTree.from_parents(
        {"n0": None, **{f"n{i}": f"n{i - 1}" for i in range(1, depth)}, "leaf2": f"n{depth - 2}"}
    )


@pytest.mark.parametrize("depth", [500, 5000])
@pytest.mark.parametrize("form", ["full", "parents", "nested", "paths"])
def test_any_depth_round_trips_through_files_in_every_form(tmp_path, depth, form):
    t = _chain(depth)
    p = write_tree_file(t, tmp_path / f"deep_{form}.json", form)
    back = LabelTree.from_json(p)
    assert back == t and back.height == depth - 1
    assert detect_tree_form(read_tree_file(p)) == form


def test_deep_nested_json_with_a_repeated_key_is_refused():
    text = '{"a": ' * 3000 + '{"x": null, "x": null}' + "}" * 3000
    col = len('{"a": ' * 3000 + '{"x": null, ') + 1
    with pytest.raises(
        ValueError, match=rf"^deep\.json: key 'x' appears twice in one JSON object \(line 1, column {col}\)"
    ):
        parse_tree_json(text, where="deep.json")


# --------------------------------------------------------------------------- property: write then read
@st.composite
def random_trees(draw):
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    n_internal, n_leaves = draw(st.integers(0, 6)), draw(st.integers(1, 12))
    parents: dict[str, str | None] = {"root": None}
    internal = ["root"]
    for i in range(n_internal):
        parents[f"g{i}"] = rng.choice(internal)
        internal.append(f"g{i}")
    leaves = [f"leaf{j}" for j in range(n_leaves)]
    for leaf in leaves:
        parents[leaf] = rng.choice(internal)
    # Internal nodes left childless would be leaves too: give each one a leaf.
    for g in internal:
        if g not in parents.values():
            parents[f"{g}_only"] = g
    t = LabelTree.from_parents(parents)
    order = t.leaves
    rng.shuffle(order)
    t = t.with_leaf_order(order)
    t.name, t.source = draw(st.sampled_from(["", "t", "é tree"])), draw(st.sampled_from(["", "paper 01"]))
    return t


@given(random_trees(), st.sampled_from(["full", "parents", "nested", "paths"]))
@settings(max_examples=40, deadline=None)
def test_writing_each_form_and_reading_back_gives_an_equal_tree(tmp_path_factory, t, form):
    p = write_tree_file(t, tmp_path_factory.mktemp("rt") / "t.json", form)
    back = LabelTree.from_json(p)
    back_obj = tree_from_obj(json.loads(json.dumps(tree_to_obj(t, form))))
    if form == "nested":  # a bare nested dict carries no leaf order: its leaves read back depth-first
        assert back.with_leaf_order(t.leaves) == t and back_obj.with_leaf_order(t.leaves) == t
    else:
        assert back == t and back_obj == t and back.leaves == t.leaves
    assert torch.equal(back.with_leaf_order(t.leaves).rho_matrix, t.rho_matrix)
    if form == "full":
        assert (back.name, back.source) == (t.name, t.source)
