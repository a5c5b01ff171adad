"""The SDK's answers to the handshake, recorded, so the stdio server can give them before the SDK loads.

Importing the MCP SDK takes most of a second, and hosts time out waiting for `initialize`
(Cline gives a server three seconds, and a loaded machine or `uvx` eats most of that). The
answers to `initialize`, `ping` and `tools/list` never change for a given SDK and a given
codescout, so `handshake.json` holds them as the SDK gave them (recorded by
`python -m codescout_mcp.handshake`, held to the SDK's live answers byte for byte by the
test suite) under a fingerprint of everything that shapes them: the versions of the SDK
and of pydantic, and the source of the modules and icons that define the server. When the
fingerprint does not match (another SDK release, an edited checkout), nothing is answered
early and the SDK answers everything, as it always can.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys

from codescout_mcp import __version__
from codescout_mcp.protocol import HANDSHAKE_VERSIONS

# Typing names are for the checker only: importing typing costs start-up time.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Final

HERE: Final = os.path.dirname(os.path.abspath(__file__))
DATA: Final = os.path.join(HERE, "handshake.json")
# What shapes the answers: the server's definition (names, words, schemas, icons, versions).
SOURCES: Final = ("contract.py", "protocol.py", "server.py", "icons/codescout.svg", "icons/codescout.png")
DISTRIBUTIONS: Final = ("mcp", "mcp_types", "pydantic", "pydantic_core")


def installed_versions() -> dict[str, str | None]:
    """The installed versions of the SDK and of pydantic, read from their dist-info folders.

    (importlib.metadata would take longer than the whole early answer is allowed.)
    """
    found: dict[str, str | None] = dict.fromkeys(DISTRIBUTIONS)
    prefixes = {name.replace("_", "-"): name for name in DISTRIBUTIONS} | {name: name for name in DISTRIBUTIONS}
    for folder in sys.path:
        try:
            entries = os.listdir(folder or ".")
        except OSError:
            continue
        for entry in entries:
            if not entry.endswith(".dist-info"):
                continue
            name, _, version = entry[: -len(".dist-info")].partition("-")
            key = prefixes.get(name) or prefixes.get(name.lower())
            if key is not None and found[key] is None:
                found[key] = version
        if all(found.values()):
            break
    return found


def fingerprint() -> str:
    """A digest of everything the recorded answers depend on."""
    digest = hashlib.sha256()
    digest.update(f"codescout {__version__}\n".encode())
    for name, version in sorted(installed_versions().items()):
        digest.update(f"{name} {version}\n".encode())
    for source in SOURCES:
        try:
            with open(os.path.join(HERE, source), "rb") as handle:
                digest.update(handle.read())
        except OSError:
            digest.update(b"missing " + source.encode())
    return digest.hexdigest()


class Handshake:
    """The recorded answers, for a server with or without a workspace."""

    def __init__(self, initialize: dict[str, Any], tools: dict[str, Any]) -> None:
        self._initialize = initialize  # protocol version -> the initialize result
        self._tools = tools  # protocol version -> the tools/list result

    def initialize_result(self, params: object) -> tuple[str, Any] | None:
        """(negotiated version, result) for well-formed `initialize` params, or None.

        Only params the SDK is sure to accept are answered: a protocol version, capabilities
        and a client's name and version, all of the right types, and no `_meta`. Anything
        else waits for the SDK, which says what is wrong with it. (An unserved version has
        already been rewritten to the newest served one by `served_initialize_params`.)
        """
        if not isinstance(params, dict) or "_meta" in params:
            return None
        version = params.get("protocolVersion")
        client = params.get("clientInfo")
        if not (
            isinstance(version, str)
            and isinstance(params.get("capabilities"), dict)
            and isinstance(client, dict)
            and isinstance(client.get("name"), str)
            and isinstance(client.get("version"), str)
        ):
            return None
        result = self._initialize.get(version)
        return (version, result) if result is not None else None

    def tools_list_result(self, version: str) -> Any:
        return self._tools.get(version)


def load(*, workspace: bool) -> Handshake | None:
    """The recorded answers, if they were recorded for exactly what is running; else None."""
    try:
        with open(DATA, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("fingerprint") != fingerprint():
        return None
    variant = data.get("with workspace" if workspace else "without workspace")
    if not isinstance(variant, dict):
        return None
    return Handshake(variant.get("initialize", {}), variant.get("tools/list", {}))


# --- recording ---------------------------------------------------------------------------------


def record() -> dict[str, Any]:
    """The answers as the SDK gives them now, through the stdio server with nothing answered early."""
    import subprocess
    import tempfile

    recorded: dict[str, Any] = {"fingerprint": fingerprint()}
    with tempfile.TemporaryDirectory() as workspace:
        for variant, extra in (("without workspace", None), ("with workspace", workspace)):
            answers: dict[str, dict[str, Any]] = {"initialize": {}, "tools/list": {}}
            for version in HANDSHAKE_VERSIONS:
                lines = [
                    {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                        "protocolVersion": version, "capabilities": {},
                        "clientInfo": {"name": "codescout-recorder", "version": "0"}}},
                    {"jsonrpc": "2.0", "method": "notifications/initialized"},
                    {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
                ]  # fmt: skip
                done = subprocess.run(
                    [sys.executable, "-c", _SDK_ONLY, repr(extra)],
                    input="".join(json.dumps(line) + "\n" for line in lines).encode(),
                    capture_output=True,
                    timeout=120,
                    check=True,
                )
                replies = {reply["id"]: reply for reply in map(json.loads, done.stdout.decode().splitlines())}
                answers["initialize"][version] = replies[1]["result"]
                answers["tools/list"][version] = replies[2]["result"]
            recorded[variant] = answers
    return recorded


# The stdio server as it runs without recorded answers: every answer is the SDK's.
_SDK_ONLY: Final = (
    "import ast, sys\n"
    "from codescout_mcp.stdio import serve_stdio\n"
    "serve_stdio(workspace=ast.literal_eval(sys.argv[1]), early_answers=False)\n"
)


def main() -> None:
    """`python -m codescout_mcp.handshake`: record the answers into handshake.json."""
    with open(DATA, "w", encoding="utf-8") as handle:
        json.dump(record(), handle, indent=1, ensure_ascii=False)
        handle.write("\n")


if __name__ == "__main__":
    main()
