"""The `codescout` command as a user runs it: the installed entry point, as a subprocess."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from codescout_mcp import __version__
from tests.helpers import EXAMPLE, EXAMPLE_RESULT, codescout_exe, installed, run_cli
from tests.platforms import CONTROL_NAMES, DEV_FULL, SHELL, linux_only, posix_only


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
    (
        "utf16_file",
        '{"hits": []}'.encode("utf-16"),
        "not valid UTF-8 at byte offset 0 (it is UTF-16LE; save it as UTF-8)",
    ),
    (
        "utf16_without_mark",
        '{"hits": []}'.encode("utf-16-be"),
        "invalid JSON at line 1, column 1: Expecting value (it is UTF-16BE; save it as UTF-8)",
    ),
    ("deep_nesting", b"[" * 100_000 + b"]" * 100_000, "invalid JSON: nested too deeply"),
    ("deep_nesting_objects", b'{"a":' * 100_000 + b"1" + b"}" * 100_000, "invalid JSON: nested too deeply"),
    (
        "thousands_of_digits",
        b'{"hits": [{"path": "a", "matches": ' + b"7" * 5000 + b', "last_modified_days": 0}]}',
        "hits[0].matches: expected an integer of at most 4000 digits, got a larger one",
    ),
    (
        "thousands_of_digits_negative",
        b'{"hits": [{"path": "a", "matches": 1, "last_modified_days": -' + b"7" * 5000 + b"}]}",
        "hits[0].last_modified_days: expected an integer >= 0, got a very large negative integer",
    ),
    (
        "fraction_beyond_two_to_the_53",
        b'{"hits": [{"path": "a", "matches": 12345678901234567891.0, "last_modified_days": 0}]}',
        "hits[0].matches: expected an integer >= 1, got 1.2345678901234567e+19",
    ),
    (
        "exponent_beyond_two_to_the_53",
        b'{"hits": [{"path": "a", "matches": 1, "last_modified_days": 0}], "limit": 1e17}',
        "limit: expected an integer >= 1 (or leave the field out), got 1e+17",
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


def test_reader_closing_the_pipe_early_is_quiet_and_not_success(tmp_path: Path) -> None:
    # 5,000 results are ~700 KB: far more than a pipe holds, so the write cannot complete.
    hits = [{"path": f"src/file_{i:05d}.py", "matches": 1 + i % 7, "last_modified_days": i % 300} for i in range(5000)]
    path = write(tmp_path, json.dumps({"hits": hits, "limit": 5000}))
    proc = subprocess.Popen([codescout_exe(), "rank", "--input", path], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.read(100)
    proc.stdout.close()
    stderr = proc.stderr.read()
    proc.wait(timeout=60)
    assert (proc.returncode, stderr) == (1, b"")


@posix_only(SHELL)
def test_a_short_write_into_head_is_exit_status_one(tmp_path: Path) -> None:
    hits = [{"path": f"src/file_{i:05d}.py", "matches": 1 + i % 7, "last_modified_days": i % 300} for i in range(5000)]
    path = write(tmp_path, json.dumps({"hits": hits, "limit": 5000}))
    done = subprocess.run(
        ["bash", "-c", f'"{codescout_exe()}" rank --input "{path}" | head -c 10 >/dev/null; echo "${{PIPESTATUS[0]}}"'],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.stdout == "1\n"


def shell(command: str) -> subprocess.CompletedProcess[bytes]:
    """Run a bash command line with the installed codescout as $CS."""
    return subprocess.run(
        ["bash", "-c", command], env={**os.environ, "CS": codescout_exe()}, capture_output=True, timeout=60, check=False
    )


@posix_only(SHELL)
@pytest.mark.parametrize(
    ("redirect", "message"),
    [
        pytest.param(
            "> /dev/full", "codescout: cannot write to stdout: No space left on device\n", marks=linux_only(DEV_FULL)
        ),
        (">&-", "codescout: cannot write the output: stdout is closed\n"),
    ],
)
@pytest.mark.parametrize("command", ["rank --input EXAMPLE", "--version", "--help", "rank --help", "mcp --help"])
def test_output_that_cannot_be_written_is_one_line_and_exit_one(command: str, redirect: str, message: str) -> None:
    done = shell(f'"$CS" {command.replace("EXAMPLE", str(EXAMPLE))} {redirect}')
    assert (done.returncode, done.stdout, done.stderr.decode()) == (1, b"", message)


@posix_only(SHELL)
def test_a_closed_stdin_is_an_error_only_for_commands_that_read_it() -> None:
    done = shell('"$CS" rank --input - <&-')
    assert (done.returncode, done.stderr) == (1, b"codescout: cannot read stdin: it is closed\n")
    done = shell('"$CS" hits <&-')
    assert (done.returncode, done.stderr) == (1, b"codescout: cannot read stdin: it is closed\n")
    for command in ("--version", "mcp --help", f"rank --input {EXAMPLE}", "hits --help"):
        done = shell(f'"$CS" {command} <&-')
        assert (done.returncode, done.stderr) == (0, b""), command
        assert done.stdout


@posix_only(SHELL)
def test_a_closed_stderr_still_gives_the_exit_status() -> None:
    assert shell('"$CS" rank --input /nonexistent.json 2>&-').returncode == 1
    assert shell('"$CS" --bogus 2>&-').returncode == 2
    done = shell(f'"$CS" rank --input {EXAMPLE} 2>&-')
    assert done.returncode == 0
    assert json.loads(done.stdout) == EXAMPLE_RESULT


@posix_only(CONTROL_NAMES)
def test_an_error_naming_a_file_with_a_newline_stays_one_line(tmp_path: Path) -> None:
    missing = tmp_path / "two\nlines.json"
    assert_one_line_error(run_cli("rank", "--input", str(missing)), 1, "two\\nlines.json: No such file")
    bad = tmp_path / "bad\rname.json"
    bad.write_text("{", encoding="utf-8")
    assert_one_line_error(run_cli("rank", "--input", str(bad)), 1, "bad\\rname.json: invalid JSON")


def test_integer_literals_too_long_to_convert_are_ignored_in_unknown_fields(tmp_path: Path) -> None:
    big = "9" * 10_000
    path = write(
        tmp_path,
        f'{{"note": {big}, "hits": [{{"path": "a", "matches": 1, "last_modified_days": 0, "x": [-{big}]}}]}}',
    )
    done = run_cli("rank", "--input", path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["results"][0]["score"] == 100


def test_codescout_mcp_is_codescout_mcp_under_its_own_name() -> None:
    both = [[codescout_exe(), "mcp"], [installed("codescout-mcp")]]
    helps = [subprocess.run([*argv, "--help"], capture_output=True, text=True, check=False) for argv in both]
    assert all(done.returncode == 0 for done in helps)
    options = [sorted(set(re.findall(r"--[a-z][a-z-]+", done.stdout))) for done in helps]
    assert options[0] == options[1]
    assert "--workspace" in options[0] and "--max-message-bytes" in options[0]
    for argv in both:
        version = subprocess.run([*argv, "--version"], capture_output=True, text=True, check=False)
        assert (version.returncode, version.stdout) == (0, f"codescout {__version__}\n")
        usage = subprocess.run([*argv, "--transport", "pigeon"], capture_output=True, text=True, check=False)
        assert usage.returncode == 2 and "invalid choice" in usage.stderr and usage.stderr.count("\n") == 1


def test_rank_does_not_import_the_mcp_sdk_or_jsonschema() -> None:
    probe = (
        "import sys\n"
        "from codescout_mcp.cli.main import main\n"
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
        "from codescout_mcp.cli.main import main\n"
        f"status = main(['rank', '--input', {path!r}])\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in {'mcp', 'pydantic', 'anyio'})\n"
        "print(status, heavy, 'jsonschema' in sys.modules, file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=False)
    assert done.stderr.splitlines()[-1] == "1 [] True"


# --- inputs without end, and inputs larger than memory ---------------------------------------------


@pytest.mark.skipif(sys.platform == "win32", reason="/dev/zero is POSIX-only")
@pytest.mark.parametrize("argv", [["rank", "--input", "/dev/zero"], ["hits", "--from", "/dev/zero"]])
def test_an_endless_input_is_one_line_at_the_size_limit(argv: list[str]) -> None:
    done = run_cli(*argv, "--max-input-bytes", str(8 << 20), timeout=30)
    assert (done.returncode, done.stdout) == (1, b"")
    assert done.stderr == (b"codescout: /dev/zero holds more than 8388608 bytes, more than --max-input-bytes allows\n")


def test_a_file_over_the_limit_is_refused_before_it_is_read(tmp_path: Path) -> None:
    path = write(tmp_path, json.dumps({"hits": [{"path": "a", "matches": 1, "last_modified_days": 0}] * 50}))
    done = run_cli("rank", "--input", path, "--max-input-bytes", "1000")
    assert (done.returncode, done.stdout) == (1, b"")
    assert done.stderr.decode() == f"codescout: {path} holds more than 1000 bytes, more than --max-input-bytes allows\n"
    assert run_cli("rank", "--input", path, "--max-input-bytes", "0").returncode == 2  # not a positive size


@pytest.mark.skipif(sys.platform == "win32", reason="resource limits are POSIX-only")
@pytest.mark.parametrize("limit", ["RLIMIT_AS", "RLIMIT_DATA"])
def test_an_input_larger_than_memory_allows_is_one_line(tmp_path: Path, limit: str) -> None:
    # 68 MB, over the fast path's threshold: the cap leaves it too little room, so the precise
    # path reads it and meets the cap as a MemoryError, said in one line.
    import resource

    hits = [{"path": f"src/f{i}.py", "matches": 1 + i % 9, "last_modified_days": i % 99} for i in range(1_000_000)]
    path = write(tmp_path, json.dumps({"hits": hits}))

    def cap() -> None:
        if sys.platform == "win32":  # the mark skips it there; said so for mypy judging the suite as Windows
            return
        resource.setrlimit(getattr(resource, limit), (160 << 20, 160 << 20))

    done = subprocess.run(
        [codescout_exe(), "rank", "--input", path], capture_output=True, preexec_fn=cap, timeout=60, check=False
    )
    assert (done.returncode, done.stdout) == (1, b"")
    assert done.stderr == b"codescout: not enough memory for this input\n"


# `codescout rank --input FILE` is run without argparse (cli/rank.py): it must be the same
# command as the one argparse reads, whatever FILE is.
THROUGH_ARGPARSE = "import sys\nfrom codescout_mcp.cli.main import main\nsys.exit(main(sys.argv[1:]))\n"


@pytest.mark.parametrize(
    ("argv", "plain"),
    [
        (["rank", "--input", "{valid}"], True),
        (["rank", "-i", "{valid}"], True),
        (["rank", "--input={valid}"], True),
        (["rank", "--input", "-"], True),
        (["rank", "--input", "{missing}"], True),
        (["rank", "--input", "{broken}"], True),
        (["rank", "--input", "{invalid}"], True),
        (["rank", "--input", ""], True),
        (["rank", "--input=-"], True),
        (["rank", "--input="], False),
        (["rank", "--input", "-x"], False),
        (["rank", "--input", "--"], False),
        (["rank", "--inp", "{valid}"], False),
        (["rank", "--input", "{valid}", "--max-input-bytes", "10"], False),
        (["rank", "--input"], False),
        (["rank"], False),
    ],
)
@posix_only("the installed command is a Python script Python can run with -X importtime")
def test_rank_without_argparse_is_the_same_command(tmp_path: Path, argv: list[str], plain: bool) -> None:
    names = {
        "valid": str(EXAMPLE),
        "missing": str(tmp_path / "missing.json"),
        "broken": write(tmp_path, '{"hits": [', "broken.json"),
        "invalid": write(tmp_path, '{"hits": [{"path": "a", "matches": 0, "last_modified_days": 1}]}', "bad.json"),
    }
    args = [arg.format(**names) for arg in argv]
    stdin = EXAMPLE.read_bytes()
    direct = subprocess.run(
        [sys.executable, "-X", "importtime", codescout_exe(), *args], input=stdin, capture_output=True, check=False
    )
    through = [sys.executable, "-c", THROUGH_ARGPARSE, *args]
    parsed = subprocess.run(through, input=stdin, capture_output=True, check=False)
    imports = b"".join(line + b"\n" for line in direct.stderr.splitlines() if line.startswith(b"import time:"))
    said = b"".join(line + b"\n" for line in direct.stderr.splitlines() if not line.startswith(b"import time:"))
    assert (direct.returncode, direct.stdout, said) == (parsed.returncode, parsed.stdout, parsed.stderr)
    assert (b" argparse\n" not in imports) == plain
