"""Memory of one large `tools/call` per MiB of its body, read as the MCP servers read it: by the
precise path (its text, then its JSON value, then `rank` on the dicts) and by the fast path
(`jsonrpc.fast_call`, from 2 MiB: msgspec into checked structs, then `ranked_structs`); and, for
the design record, as an SDK middleware would take it (the precise path's value made the SDK's
message model, the answer written as the SDK writes a response: docs/architecture.md, "Why the
door is in the transports").

    python bench/call_memory.py            # 300,000 hits (about 25 MiB), each way in a fresh process
    python bench/call_memory.py --smoke    # 2,000 hits: the script still runs

Two calls: the usual one (`limit` 10), and the worst the HTTP memory formula plans for, the
smallest hits with a `limit` that returns every one of them (docs/http.md). Each goes from
the body to the encoded answer through the door, as both transports take it, in a fresh
process, measured with tracemalloc from the moment the body exists (it is counted in, as a
server holds it); the peak is given per MiB of body. msgspec and Python's own objects are
allocated through Python's allocator, so tracemalloc sees them all. Target: the fast path's
usual call at most 3 MiB per MiB.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

ONE_WAY = r"""
import gc, json, sys, tracemalloc

count, way, shape = int(sys.argv[1]), sys.argv[2], sys.argv[3]
if shape == "usual":
    hits = [
        {"path": f"src/dir{i % 50}/file{i}.py", "matches": 1 + i % 30, "last_modified_days": i % 400,
         **({"owner": "@team"} if i % 2 else {})}
        for i in range(count)
    ]
    arguments = {"hits": hits}
else:  # the smallest hits, every one of them returned
    hits = [{"path": f"{i:x}", "matches": 1, "last_modified_days": 0} for i in range(count)]
    arguments = {"hits": hits, "limit": count}
call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "rank_search_results",
        "arguments": arguments}}
body = json.dumps(call, separators=(",", ":")).encode()
del hits, call, arguments
size = len(body)

from codescout_mcp.answers.door import Session
from codescout_mcp.core.fastpath import call_message
from codescout_mcp.answers.jsonrpc import check_envelope, decoded, encode, parsed
from codescout_mcp.tools.toolbox import Offer

door = Offer().door()
import codescout_mcp.core.fastpath, codescout_mcp.core.ranking, codescout_mcp.core.validate, msgspec  # (not counted)
if way == "sdk":
    import mcp_types, pydantic

def through_the_sdk(holder):
    # What an SDK middleware would cost (docs/architecture.md, "Why the door is in the transports"):
    # the envelope made the SDK's model, the call answered from the model's params, and the answer
    # written as the SDK writes a response (a model, dumped).
    import mcp_types as types
    from codescout_mcp.answers.jsonrpc import sdk_message
    text = decoded(holder[0])
    holder.clear()
    value = parsed(text)
    del text
    model = sdk_message(check_envelope(value))
    del value
    envelope = {"jsonrpc": "2.0", "id": model.id, "method": model.method, "params": model.params}
    del model
    route = door.route(envelope, Session.stateless("2025-11-25"))
    del envelope
    reply = route.run()
    del route
    response = types.JSONRPCResponse(jsonrpc="2.0", id=reply["id"], result=reply["result"])
    del reply
    return encode(response.model_dump(by_alias=True, exclude_unset=True, mode="json"))

def answer(holder):
    if way == "sdk":
        return through_the_sdk(holder)
    if way == "fast":
        value = call_message(holder[0])  # (what fast_call gives from FAST_BYTES on)
        assert value is not None, "the fast path did not read it"
    else:
        text = decoded(holder[0])
        holder.clear()
        value = parsed(text)
        del text
    holder.clear()
    route = door.route(check_envelope(value), Session.stateless("2025-11-25"))
    del value
    reply = route.run()
    del route
    return encode(reply)

gc.collect()
gc.disable()
holder = [None]
tracemalloc.start()
holder[0] = bytes(body)  # the body as a server holds it, traced
del body
result = answer(holder)
peak = tracemalloc.get_traced_memory()[1]
print(json.dumps({"size": size, "peak": peak, "answer": json.loads(result)}))
"""


def one_way(count: int, way: str, shape: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", ONE_WAY, str(count), way, shape], capture_output=True, text=True, check=True, cwd=ROOT
    )
    measured: dict[str, object] = json.loads(done.stdout)
    return measured


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="2,000 hits: check the script runs")
    parser.add_argument("--hits", type=int, default=300_000, help="hits in the call (default 300,000)")
    options = parser.parse_args()
    count = 2_000 if options.smoke else options.hits
    ok = True
    for shape in ("usual", "worst"):
        precise, fast, sdk = (one_way(count, way, shape) for way in ("precise", "fast", "sdk"))
        if not precise["answer"] == fast["answer"] == sdk["answer"]:
            raise SystemExit(f"the ways disagree on the {shape} call's answer")
        size = precise["size"]
        assert isinstance(size, int)
        ratios = {}
        for name, measured in (("precise path", precise), ("fast path", fast), ("through SDK", sdk)):
            peak = measured["peak"]
            assert isinstance(peak, int)
            ratios[name] = peak / size
            print(
                f"{count:,}-hit {shape} tools/call ({size / 2**20:.1f} MiB): {name:<12} {peak / size:.2f} MiB per MiB"
            )
        if shape == "usual":
            ok = ratios["fast path"] <= 3.0
    print("target met (fast path, usual call: at most 3 MiB per MiB)" if ok else "OVER TARGET")
    return 0 if options.smoke or ok else 1


if __name__ == "__main__":
    sys.exit(main())
