import os

import pytest

from core.paths import PathRefused, configured_roots, resolve_allowed


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "root"
    (root / "data").mkdir(parents=True)
    (root / "data" / "a.jsonl").write_text("{}\n")
    outside = tmp_path / "outside.jsonl"
    outside.write_text("{}\n")
    (root / "link.jsonl").symlink_to(outside)
    return root, outside


def test_inside_root_is_allowed(tree):
    root, _ = tree
    got = resolve_allowed(str(root / "data" / "a.jsonl"), roots=[root.resolve()])
    assert got.path == (root / "data" / "a.jsonl").resolve()


@pytest.mark.parametrize("rel", ["../outside.jsonl", "data/../../outside.jsonl", "link.jsonl"], ids=str)
def test_escapes_are_refused(tree, rel):
    root, _ = tree
    with pytest.raises(PathRefused, match="outside the directories"):
        resolve_allowed(str(root / rel), roots=[root.resolve()])


def test_no_roots_means_no_server_paths(tree):
    root, _ = tree
    with pytest.raises(PathRefused, match="no roots are configured"):
        resolve_allowed(str(root / "data" / "a.jsonl"), roots=[])


def test_directory_given_for_a_file(tree):
    root, _ = tree
    with pytest.raises(PathRefused, match="a directory"):
        resolve_allowed(str(root / "data"), roots=[root.resolve()])


def test_missing_and_nul(tree):
    root, _ = tree
    with pytest.raises(PathRefused, match="Nothing exists"):
        resolve_allowed(str(root / "nope.jsonl"), roots=[root.resolve()])
    with pytest.raises(PathRefused, match="NUL"):
        resolve_allowed("a\0b", roots=[root.resolve()])


def test_configured_roots_skips_missing(tree, tmp_path):
    root, _ = tree
    env = {"SLIME_ASSISTANT_ROOTS": os.pathsep.join([str(root), str(tmp_path / "missing")])}
    assert configured_roots(env) == [root.resolve()]


def test_refusals_outside_the_roots_do_not_reveal_what_exists(tree, tmp_path):
    root, outside = tree
    messages = []
    for path in (str(outside), str(tmp_path / "no-such-file.jsonl")):
        with pytest.raises(PathRefused) as exc:
            resolve_allowed(path, roots=[root.resolve()])
        messages.append(str(exc.value).replace(path, "P"))
    assert messages[0] == messages[1]


def test_a_link_refusal_names_the_typed_path_not_its_target(tree):
    root, outside = tree
    with pytest.raises(PathRefused) as exc:
        resolve_allowed(str(root / "link.jsonl"), roots=[root.resolve()])
    assert str(outside) not in str(exc.value) and "link.jsonl" in str(exc.value)
