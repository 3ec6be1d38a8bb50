import os

import pytest

from core.paths import (
    ENV_ROOTS,
    PathRefused,
    configured_roots,
    containing_roots,
    read_within,
    resolve_allowed,
)


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
    with pytest.raises(PathRefused, match="no such file or folder"):
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


# --------------------------------------------------------------------------------------------------
# read_within: files read through an accepted directory (issue 15, items 16 and 17)
# --------------------------------------------------------------------------------------------------
def test_read_within_reads_a_file_inside_the_roots(tree):
    root, _ = tree
    assert read_within(root / "data" / "a.jsonl", [root.resolve()], limit=100) == b"{}\n"


def test_read_within_reads_at_most_one_byte_past_the_limit(tree):
    root, _ = tree
    (root / "big.txt").write_bytes(b"x" * 1000)
    assert len(read_within(root / "big.txt", [root.resolve()], limit=10)) == 11


def test_read_within_refuses_a_link_to_a_file_outside(tree):
    root, outside = tree
    with pytest.raises(PathRefused) as exc:
        read_within(root / "link.jsonl", [root.resolve()], limit=100)
    assert str(outside) not in str(exc.value)


def test_read_within_refuses_a_file_under_a_linked_directory(tree, tmp_path):
    root, _ = tree
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "x.sh").write_text("secret")
    (root / "models").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(PathRefused):
        read_within(root / "models" / "x.sh", [root.resolve()], limit=100)


def test_read_within_refuses_a_fifo_without_blocking(tree):
    root, _ = tree
    os.mkfifo(root / "pipe")
    with pytest.raises(PathRefused, match="not a regular file"):
        read_within(root / "pipe", [root.resolve()], limit=100)


def test_read_within_refuses_a_file_swapped_for_a_link_after_the_check(tree, monkeypatch):
    """The swap happens between the containment check and the open: O_NOFOLLOW refuses the link."""
    import core.paths as paths

    root, outside = tree
    target = root / "data" / "a.jsonl"
    real_open = os.open

    def swap_then_open(path, flags, *args):
        if str(path) == str(target.resolve()):
            target.unlink()
            target.symlink_to(outside)
        return real_open(path, flags, *args)

    monkeypatch.setattr(paths.os, "open", swap_then_open)
    with pytest.raises(PathRefused):
        read_within(target, [root.resolve()], limit=100)


def test_read_within_refuses_a_directory_swapped_for_a_link_after_the_check(tree, tmp_path, monkeypatch):
    """A parent directory swapped for a link is not caught by O_NOFOLLOW; the opened file's real path is."""
    import core.paths as paths

    root, _ = tree
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "a.jsonl").write_text("secret")
    target = root / "data" / "a.jsonl"
    real_open = os.open

    def swap_then_open(path, flags, *args):
        if str(path) == str(target.resolve()):
            (root / "data").rename(root / "data.old")
            (root / "data").symlink_to(elsewhere)
        return real_open(path, flags, *args)

    monkeypatch.setattr(paths.os, "open", swap_then_open)
    with pytest.raises(PathRefused):
        read_within(target, [root.resolve()], limit=100)


def test_read_within_missing_file_is_an_os_error(tree):
    root, _ = tree
    with pytest.raises(FileNotFoundError):
        read_within(root / "nope.sh", [root.resolve()], limit=100)


def test_containing_roots_are_the_configured_ones_or_the_directory_itself(tree, monkeypatch):
    root, _ = tree
    monkeypatch.setenv(ENV_ROOTS, str(root))
    assert containing_roots(root / "data") == [root.resolve()]
    monkeypatch.delenv(ENV_ROOTS)
    assert containing_roots(root / "data") == [(root / "data").resolve()]


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


def test_open_regular_refuses_kernel_files_and_special_files(tmp_path):
    from core.paths import NotRegularFile, read_regular

    good = tmp_path / "a.txt"
    good.write_bytes(b"abc")
    assert read_regular(good) == b"abc" and read_regular(good, 2) == b"ab"
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path, what in ((tmp_path, "a directory"), (fifo, "a named pipe"), ("/dev/null", "a device"),
                       ("/proc/self/status", "kernel's pseudo file systems")):
        if not os.path.exists(path):
            continue
        with pytest.raises(NotRegularFile, match=what):
            read_regular(path)


def test_open_regular_reads_shared_memory_files():
    from core.paths import read_regular

    if not os.path.isdir("/dev/shm") or not os.access("/dev/shm", os.W_OK):
        pytest.skip("no writable /dev/shm")
    path = f"/dev/shm/slime-assistant-test-{os.getpid()}"
    with open(path, "wb") as fh:
        fh.write(b"x")
    try:
        assert read_regular(path) == b"x"
    finally:
        os.unlink(path)


def test_expand_user_and_name_length():
    from core.paths import expand_user, name_length_problem

    with pytest.raises(PathRefused, match="no such user"):
        expand_user("~nosuchuser-slime-test/x")
    assert name_length_problem("/tmp/" + "a" * 256).startswith("one name in it is 256 bytes")
    assert name_length_problem("/".join(["d"] * 3000)).startswith("the path is")
    assert name_length_problem("/tmp/ok.sh") is None
