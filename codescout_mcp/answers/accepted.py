"""Params of the shapes the SDK's models are sure to accept, checked without the SDK.

Each check answers True only for a shape the SDK's models (mcp-types) accept whatever else it
holds (they ignore unknown members); False sends the message on to the SDK, which says what
is wrong with it. The door (`door.py`) asks them before codescout answers for the SDK: a
host's first requests, and the calls of codescout's own tools. Standard library only.
"""

from __future__ import annotations

from codescout_mcp.answers.protocol import MODERN_VERSIONS
from codescout_mcp.core.fastpath import Decoded

# Why TYPE_CHECKING = False: docs/architecture.md, "Why the layers".
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Collection
    from typing import Any, Final

PROTOCOL_VERSION_KEY: Final = "io.modelcontextprotocol/protocolVersion"
CLIENT_INFO_KEY: Final = "io.modelcontextprotocol/clientInfo"
CLIENT_CAPABILITIES_KEY: Final = "io.modelcontextprotocol/clientCapabilities"


def is_str(value: object) -> bool:
    return isinstance(value, str)


def optional(value: dict[str, Any], key: str, check: Any) -> bool:
    return key not in value or check(value[key])


def _objects(value: object, check: Any = None) -> bool:
    """An object whose members are all objects (and pass `check`, if given)."""
    return isinstance(value, dict) and all(
        isinstance(member, dict) and (check is None or check(member)) for member in value.values()
    )


def _icon(value: object) -> bool:
    return (
        isinstance(value, dict)
        and is_str(value.get("src"))
        and optional(value, "mimeType", is_str)
        and optional(value, "sizes", lambda sizes: isinstance(sizes, list) and all(map(is_str, sizes)))
        and optional(value, "theme", lambda theme: theme in ("light", "dark"))
    )


def implementation(value: object) -> bool:
    """A client's `Implementation`: a name and a version, and optional words and icons."""
    return (
        isinstance(value, dict)
        and is_str(value.get("name"))
        and is_str(value.get("version"))
        and all(optional(value, key, is_str) for key in ("title", "description", "websiteUrl"))
        and optional(value, "icons", lambda icons: isinstance(icons, list) and all(map(_icon, icons)))
    )


# The nested shapes of ClientCapabilities (mcp-types): each member an object of these members,
# each of which is in turn an object (None: of any members). Unknown members are ignored, as the
# models ignore them; a known member of another type (null included) is left to the SDK.
NESTED_CAPABILITIES: Final[dict[str, Any]] = {
    "sampling": {"context": None, "tools": None},
    "elicitation": {"form": None, "url": None},
    "tasks": {
        "list": None,
        "cancel": None,
        "requests": {"sampling": {"createMessage": None}, "elicitation": {"create": None}},
    },
}


def _fits(value: object, shape: dict[str, Any] | None) -> bool:
    """An object whose known members (`shape`'s) are objects of their own shapes, all the way down."""
    if not isinstance(value, dict):
        return False
    return shape is None or all(key not in value or _fits(value[key], sub) for key, sub in shape.items())


def client_capabilities(value: object) -> bool:
    """`ClientCapabilities` whose every member, however deep, is of the type the SDK's models expect."""
    if not isinstance(value, dict):
        return False
    return (
        all(optional(value, key, _objects) for key in ("experimental", "extensions"))
        and all(
            optional(value, key, lambda member, shape=shape: _fits(member, shape))
            for key, shape in NESTED_CAPABILITIES.items()
        )
        and optional(value, "roots", lambda roots: isinstance(roots, dict) and optional(roots, "listChanged", _is_bool))
    )


def _is_bool(value: object) -> bool:
    return isinstance(value, bool)


def _progress_token(value: object) -> bool:
    return isinstance(value, str) or type(value) is int


def request_meta(value: object) -> bool:
    """A request's `_meta`: any object, with a string or integer progress token if it has one."""
    return isinstance(value, dict) and optional(value, "progressToken", _progress_token)


def modern_meta(meta: object) -> bool:
    """A 2026-07-28 request's `_meta`: the served version, and a client and capabilities the SDK takes."""
    return (
        request_meta(meta)
        and isinstance(meta, dict)
        and meta.get(PROTOCOL_VERSION_KEY) in MODERN_VERSIONS
        and implementation(meta.get(CLIENT_INFO_KEY))
        and client_capabilities(meta.get(CLIENT_CAPABILITIES_KEY))
    )


def initialize_params(params: object) -> bool | None:
    """True for `initialize` params the SDK accepts, False for ones it refuses (-32602), None when unsure."""
    if not isinstance(params, dict):
        return None
    required = ("protocolVersion", "capabilities", "clientInfo")
    if any(key not in params for key in required) or not is_str(params["protocolVersion"]):
        return False
    if not isinstance(params["capabilities"], dict) or not isinstance(params["clientInfo"], dict):
        return False
    client = params["clientInfo"]
    if not (is_str(client.get("name")) and is_str(client.get("version"))):
        return False
    sure = (
        implementation(client)
        and client_capabilities(params["capabilities"])
        and optional(params, "_meta", request_meta)
    )
    return True if sure else None


def list_params(params: object, *, modern: bool) -> bool:
    """Params a list request may carry whatever the SDK: `_meta`, and a string cursor."""
    if params is None:
        return not modern
    if not isinstance(params, dict) or not set(params) <= {"_meta", "cursor"}:
        return False
    return optional(params, "cursor", is_str) and (
        modern_meta(params.get("_meta")) if modern else optional(params, "_meta", request_meta)
    )


def opens_modern(message: dict[str, Any]) -> bool:
    """Whether a request carries the 2026-07-28 envelope (as the SDK tells the eras apart)."""
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    return message["method"] != "initialize" and isinstance(meta, dict) and PROTOCOL_VERSION_KEY in meta


def call_params(params: object, names: Collection[str], *, modern: bool) -> bool:
    """`tools/call` params naming one of `names`, with object arguments (or arguments the fast path
    decoded from one), of a shape the SDK takes (nothing but name, arguments and `_meta`; at a
    handshake version, no 2026-07-28 envelope)."""
    if not isinstance(params, dict) or not set(params) <= {"name", "arguments", "_meta"}:
        return False
    if params.get("name") not in names or not isinstance(params.get("arguments", {}), (dict, Decoded)):
        return False
    if modern:
        return modern_meta(params.get("_meta"))
    # At a handshake version, a request carrying the 2026-07-28 envelope is the SDK's to refuse.
    return "_meta" not in params or (request_meta(params["_meta"]) and PROTOCOL_VERSION_KEY not in params["_meta"])
