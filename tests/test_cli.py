"""The `codescout` command as a user runs it: the installed entry point, as a subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from codescout_mcp import __version__
from tests.helpers import EXAMPLE, EXAMPLE_RESULT, codescout_exe, run_cli


def assert_one_line_error(done: subprocess.CompletedProcess[bytes], status: int, text: str) -> None:
    """Exit status, nothing on stdout, and exactly one stderr line that contains `text`."""
    stderr = done.stderr.decode("utf-8", "replace")
    assert done.returncode == status, stderr
    assert done.stdout == b""
    assert stderr.count("\n") == 1 and stderr.endswith("\n"), stderr
    assert "Traceback" not in stderr
    assert text in stderr, stderr


def write(tmp_path: Path, content: str | bytes, name: str = "args.json") -> str:
    target = tmp_path / name
    if isinstance(content, bytes):
        target.write_bytes(content)
    else:
        target.write_text(content, encoding="utf-8")
    return str(target)


def test_bundled_example_prints_the_pinned_result_with_two_space_indent() -> None:
    done = run_cli("rank", "--input", str(EXAMPLE))
    assert (done.returncode, done.stderr) == (0, b"")
    assert done.stdout.decode("utf-8") == json.dumps(EXAMPLE_RESULT, indent=2) + "\n"


def test_stdin_is_read_with_a_dash() -> None:
    done = run_cli("rank", "--input", "-", stdin=EXAMPLE.read_bytes())
    assert done.returncode == 0
    assert json.loads(done.stdout) == EXAMPLE_RESULT


def test_short_option_and_python_dash_m_work() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "codescout_mcp", "rank", "-i", str(EXAMPLE)], capture_output=True, check=False
    )
    assert done.returncode == 0
    assert json.loads(done.stdout) == EXAMPLE_RESULT


def test_version_and_help() -> None:
    done = run_cli("--version")
    assert (done.returncode, done.stdout.decode()) == (0, f"codescout {__version__}\n")
    done = run_cli("--help")
    assert done.returncode == 0 and b"rank" in done.stdout and b"mcp" in done.stdout
    done = run_cli("rank", "--help")
    assert done.returncode == 0 and b"--input" in done.stdout


@pytest.mark.parametrize(
    ("argv", "text"),
    [
        ((), "a command is required"),
        (("rank",), "--input"),
        (("rank", "--input"), "expected one argument"),
        (("frobnicate",), "invalid choice"),
        (("rank", "--input", "x.json", "--bogus"), "unrecognized arguments: --bogus"),
        (("--nope",), "unrecognized arguments"),
        (("mcp", "--log-level", "loud"), "invalid choice"),
    ],
)
def test_usage_errors_exit_2_with_one_line(argv: tuple[str, ...], text: str) -> None:
    assert_one_line_error(run_cli(*argv), 2, text)


def test_invalid_arguments_exit_1_naming_the_location(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        '{"hits": [{"path": "a", "matches": 1, "last_modified_days": 0}, '
        '{"path": "b", "matches": 0, "last_modified_days": 0}]}',
    )
    done = run_cli("rank", "--input", path)
    assert_one_line_error(done, 1, "codescout: hits[1].matches: expected an integer >= 1, got 0")


HOSTILE_FILES: list[tuple[str, bytes, str]] = [
    ("empty_file", b"", "invalid JSON at line 1, column 1"),
    ("whitespace_only", b"  \n\t", "invalid JSON at line 2, column 2"),
    ("invalid_json", b'{"hits": [', "invalid JSON at line 1, column 11"),
    ("trailing_garbage", b'{"hits": []} x', "invalid JSON at line 1, column 14: Extra data"),
    ("nan_literal", b'{"hits": [{"path": "a", "matches": NaN, "last_modified_days": 0}]}', "NaN is not a JSON value"),
    ("infinity_literal", b'{"hits": [], "limit": Infinity}', "Infinity is not a JSON value"),
    ("minus_infinity", b'{"hits": [], "limit": -Infinity}', "-Infinity is not a JSON value"),
    (
        "invalid_utf8",
        b'{"hits": [{"path": "\xff\xfe", "matches": 1, "last_modified_days": 0}]}',
        "not valid UTF-8 at byte offset 20",
    ),
    ("utf16_file", '{"hits": []}'.encode("utf-16"), "not valid UTF-8 at byte offset 0"),
    ("deep_nesting", b"[" * 100_000 + b"]" * 100_000, "invalid JSON: nested too deeply"),
    ("deep_nesting_objects", b'{"a":' * 100_000 + b"1" + b"}" * 100_000, "invalid JSON: nested too deeply"),
    (
        "thousands_of_digits",
        b'{"hits": [{"path": "a", "matches": ' + b"7" * 5000 + b', "last_modified_days": 0}]}',
        "a number has more than 4300 digits",
    ),
    (
        "huge_exponent",
        b'{"hits": [{"path": "a", "matches": 1e999, "last_modified_days": 0}]}',
        "hits[0].matches: expected an integer >= 1, got a number out of range",
    ),
    ("top_level_array", b"[]", "arguments: expected an object, got an empty array"),
    ("top_level_string", b'"hits"', 'arguments: expected an object, got "hits"'),
    ("top_level_number", b"42", "arguments: expected an object, got 42"),
    ("top_level_null", b"null", "arguments: expected an object, got null"),
    ("control_char_in_string", b'{"hits": [{"path": "a\nb"}]}', "Invalid control character"),
    (
        "newline_in_bad_value",
        b'{"hits": [{"path": "a\\nb", "matches": "x\\ny", "last_modified_days": 0}]}',
        'hits[0].matches: expected an integer >= 1, got "x\\ny"',
    ),
]


@pytest.mark.parametrize(("name", "content", "text"), HOSTILE_FILES, ids=[h[0] for h in HOSTILE_FILES])
def test_hostile_input_is_one_clean_error(tmp_path: Path, name: str, content: bytes, text: str) -> None:
    assert_one_line_error(run_cli("rank", "--input", write(tmp_path, content)), 1, text)


@pytest.mark.parametrize(("name", "content", "text"), HOSTILE_FILES[:4], ids=[h[0] for h in HOSTILE_FILES[:4]])
def test_hostile_stdin_names_stdin(name: str, content: bytes, text: str) -> None:
    done = run_cli("rank", "--input", "-", stdin=content)
    assert_one_line_error(done, 1, f"codescout: stdin: {text}")


def test_missing_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.json"
    assert_one_line_error(run_cli("rank", "--input", str(missing)), 1, f"cannot read {missing}: No such file")


def test_directory(tmp_path: Path) -> None:
    assert_one_line_error(run_cli("rank", "--input", str(tmp_path)), 1, "Is a directory")


def test_integer_with_thousands_of_digits_is_exact(tmp_path: Path) -> None:
    big = "8" * 3000
    path = write(tmp_path, f'{{"hits": [{{"path": "a", "matches": {big}, "last_modified_days": 1}}]}}')
    done = run_cli("rank", "--input", path)
    assert done.returncode == 0
    assert f'"score": {int(big) * 100 - 1},' in done.stdout.decode()


def test_lone_surrogates_are_accepted_and_written_back_escaped(tmp_path: Path) -> None:
    path = write(
        tmp_path, '{"hits": [{"path": "x\\ud800", "matches": 1, "last_modified_days": 0, "owner": "\\udfff"}]}'
    )
    done = run_cli("rank", "--input", path)
    assert (done.returncode, done.stderr) == (0, b"")
    text = done.stdout.decode("utf-8")  # strict: the output is valid UTF-8
    assert '"path": "x\\ud800"' in text
    assert json.loads(text)["results"][0]["owner"] == "\udfff"


def test_utf8_bom_is_skipped_and_non_ascii_written_as_utf8(tmp_path: Path) -> None:
    content = '\ufeff{"hits": [{"path": "caf\u00e9/\U0001f600.py", "matches": 1, "last_modified_days": 0}]}'
    done = run_cli("rank", "--input", write(tmp_path, content))
    assert done.returncode == 0
    assert "caf\u00e9/\U0001f600.py".encode() in done.stdout


def test_duplicate_keys_take_the_last_value_like_json_parse(tmp_path: Path) -> None:
    path = write(tmp_path, '{"hits": [{"path": "a", "matches": 0, "matches": 2, "last_modified_days": 0}]}')
    done = run_cli("rank", "--input", path)
    assert json.loads(done.stdout)["results"][0]["score"] == 200


def test_reader_closing_the_pipe_early_is_quiet(tmp_path: Path) -> None:
    hits = [{"path": f"src/file_{i:05d}.py", "matches": 1 + i % 7, "last_modified_days": i % 300} for i in range(5000)]
    path = write(tmp_path, json.dumps({"hits": hits, "limit": 5000}))
    proc = subprocess.Popen([codescout_exe(), "rank", "--input", path], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.read(100)
    proc.stdout.close()
    stderr = proc.stderr.read()
    proc.wait(timeout=60)
    assert b"Traceback" not in stderr and b"Exception" not in stderr
    assert proc.returncode in (0, 1)


def test_rank_does_not_import_the_mcp_sdk_or_jsonschema() -> None:
    probe = (
        "import sys\n"
        "from codescout_mcp.cli import main\n"
        f"status = main(['rank', '--input', {str(EXAMPLE)!r}])\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in {'mcp', 'pydantic', 'jsonschema', 'anyio'})\n"
        "print(status, heavy, file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=False)
    assert done.stderr.strip() == "0 []"


def test_error_path_imports_jsonschema_but_not_the_mcp_sdk(tmp_path: Path) -> None:
    path = write(tmp_path, '{"hits": []}')
    probe = (
        "import sys\n"
        "from codescout_mcp.cli import main\n"
        f"status = main(['rank', '--input', {path!r}])\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in {'mcp', 'pydantic', 'anyio'})\n"
        "print(status, heavy, file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=False)
    assert done.stderr.strip().endswith("1 []")
