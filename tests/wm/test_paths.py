"""Path-like strings of guard D: every form DESIGN 3.5 D and 3.7 name."""

from __future__ import annotations

import pytest

from app.wm.paths import EXTENSIONS, find_paths
from tests.wm.helpers import path_set


@pytest.mark.parametrize(
    ("text", "paths"),
    [
        ("edit app/main.py now", ["app/main.py"]),
        ("main.py and README.md", ["main.py", "README.md"]),
        ("compiled file.pyc only", []),
        ("a/b/file.pyc", ["a/b/file.pyc"]),
        ("file.py.bak", []),
        ("archive.py-old", []),
        ("a.py.txt", ["a.py.txt"]),
        ("see app.py.", ["app.py"]),
        ("CONFIG.YAML and Setup.Cfg", ["CONFIG.YAML", "Setup.Cfg"]),
        ("x.tsx y.ts z.jsx", ["x.tsx", "y.ts", "z.jsx"]),
        ("module_1.py and module-2.py", ["module_1.py", "module-2.py"]),
        ("a/b", ["a/b"]),
        ("app/sessions/service", ["app/sessions/service"]),
        ("client/server is a false positive", ["client/server"]),
        ("on 05/20/2024", []),
        ("runs/2024/report", ["runs/2024/report"]),
        ("./src/app.py", ["src/app.py"]),
        ("././src/app.py", ["src/app.py"]),
        ("../lib/util", ["../lib/util"]),
        ("~/.config/tool", ["~/.config/tool"]),
        (".github/workflows/ci.yml", [".github/workflows/ci.yml"]),
        ("v1/users/", ["v1/users"]),
        ("/usr/local/bin", ["/usr/local/bin"]),
        (r"C:\Users\me\app.py", [r"C:\Users\me\app.py"]),
        (r"D:\work\notes.TXT", [r"D:\work\notes.TXT"]),
        (r"C:\Users\me", []),
        (
            "https://github.com/org/repo/blob/main/src/app.py#L12",
            ["/org/repo/blob/main/src/app.py"],
        ),
        ("http://example.com/a/b?q=1", ["/a/b"]),
        ("https://example.com/docs", []),
        ("https://example.com/guide.md", ["/guide.md"]),
        ("http://[broken/a/b", []),
        ("README", []),
        ("e.g. this", []),
        ("run `pytest tests/wm/test_merge.py`", ["tests/wm/test_merge.py"]),
        ("a/b and a/b again", ["a/b"]),
    ],
)
def test_find_paths(text: str, paths: list[str]) -> None:
    assert find_paths(text) == paths


def test_paths_keep_the_order_of_first_appearance() -> None:
    text = "b/z.py then https://h/a/b/c then a.py then b/z.py"
    assert find_paths(text) == ["b/z.py", "/a/b/c", "a.py"]
    assert path_set(text) == {"b/z.py", "/a/b/c", "a.py"}


@pytest.mark.parametrize("extension", EXTENSIONS)
def test_every_listed_extension_is_a_path(extension: str) -> None:
    assert find_paths(f"name.{extension}") == [f"name.{extension}"]


@pytest.mark.parametrize(
    ("text", "paths"),
    [
        # Paths on many lines, lines with none between them, each found once at its first line.
        ("no path\napp/a.py here\nnothing\n  b/c/d\nagain app/a.py", ["app/a.py", "b/c/d"]),
        # A chain first seen on a later line than a file name keeps the order of appearance.
        ("x.md\n\nsrc/lib\n", ["x.md", "src/lib"]),
        # A line break ends a path as the text's end does.
        ("a/b\nc.py\n", ["a/b", "c.py"]),
        ("a/b\n/c", ["a/b"]),
        ("tail.py\n.md", ["tail.py"]),
        ("name.\npy", []),
        ("a\\\nb.py", ["b.py"]),
        # The same path found as a file name and as a chain counts where it was found first.
        ("see lib/x\nand lib/x.py and lib/x", ["lib/x", "lib/x.py"]),
        # Around a URL, lines are scanned as well (before, inside and after it).
        ("a.py\nhttp://h/x/y.ts\nc/d", ["a.py", "/x/y.ts", "c/d"]),
        ("only a slash / here\nand a dot . there", []),
    ],
)
def test_paths_over_lines(text: str, paths: list[str]) -> None:
    assert find_paths(text) == paths


@pytest.mark.parametrize(
    ("text", "paths"),
    [
        ("a/b/", ["a/b"]),
        ("a/b.", ["a/b"]),
        ("../x/y/", ["../x/y"]),
        ("a.b/c-d/e.f-", ["a.b/c-d/e.f-"]),
        ("x/-/y", ["x/-/y"]),
        ("a/b//c", ["a/b"]),
        (".a/b", [".a/b"]),
        ("a/b/-", ["a/b/-"]),
        ("a-/b", ["a-/b"]),
        ("~/.x/y.z/", ["~/.x/y.z"]),
    ],
)
def test_chain_ends(text: str, paths: list[str]) -> None:
    assert find_paths(text) == paths
