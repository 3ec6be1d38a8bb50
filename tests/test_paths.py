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


# -- citations link to the upstream lines ---------------------------------------------------------------

from core.pins import link_citations, source_url  # noqa: E402


def test_citations_link_to_the_pinned_upstream_lines():
    assert source_url("slime/utils/arguments.py:688-717@624b824a") == (
        "https://github.com/THUDM/slime/blob/624b824a898ab0ec1fcb4d373004c7f3852bf515/slime/utils/arguments.py"
        "#L688-L717")
    assert source_url("megatron/training/arguments.py:498@1dcf0daf").endswith(
        "/NVIDIA/Megatron-LM/blob/1dcf0dafa884ad52ffb243625717a3471643e087/megatron/training/arguments.py#L498")
    assert source_url("python/sglang/srt/server_args.py@v0.5.15.post1") == (
        "https://github.com/sgl-project/sglang/blob/v0.5.15.post1/python/sglang/srt/server_args.py")
    assert source_url("sglang_router/router_args.py:826@sglang-router-0.3.2").startswith("https://pypi.org/")
    assert source_url("not a citation") is None and source_url("x.py@unknownpin") is None


def test_inline_citations_in_markdown_become_links_and_nothing_else_changes():
    text = "see `slime/utils/data.py:31@624b824a` and `--flag`"
    out = link_citations(text)
    assert out.startswith("see [`slime/utils/data.py:31@624b824a`](https://github.com/THUDM/slime/blob/")
    assert out.endswith("#L31) and `--flag`")
    assert link_citations(out) == out  # already linked: left alone
