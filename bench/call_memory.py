"""Memory of one large `tools/call` per MiB of its body: the read the servers do today against a
msgspec decode of the whole message into structs (the question of issue 38's MCP part).

    python bench/call_memory.py            # 300,000 hits (about 25 MiB), each way in a fresh process
    python bench/call_memory.py --smoke    # 2,000 hits: the script still runs

Today's read is what both transports do with a message: its UTF-8 text (`jsonrpc.decoded`), the
value (`jsonrpc.parsed`, the bytes gone by then), the envelope's check and `rank` on the dicts.
The other way decodes the bytes with msgspec into a struct of the JSON-RPC request whose
arguments are the structs `fastpath` builds from the contract, then `ranked_structs`. Each is
measured with tracemalloc from the moment the body exists (it is counted in, as a server holds
it) to the answer; the peak is given per MiB of body. msgspec and Python's own objects are
allocated through Python's allocator, so tracemalloc sees them all.
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
from typing import Literal, Union

count, way = int(sys.argv[1]), sys.argv[2]
hits = [
    {"path": f"src/dir{i % 50}/file{i}.py", "matches": 1 + i % 30, "last_modified_days": i % 400,
     **({"owner": "@team"} if i % 2 else {})}
    for i in range(count)
]
call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "rank_search_results", "arguments": {"hits": hits}}}
body = json.dumps(call).encode()
del hits, call
size = len(body)

if way == "today":
    from codescout_mcp.jsonrpc import check_envelope, decoded, parsed
    from codescout_mcp.ranking import rank

    def answer(holder):
        text = decoded(holder.pop())
        value = parsed(text)
        del text
        return rank(check_envelope(value)["params"]["arguments"])
else:
    import msgspec
    from codescout_mcp import fastpath
    from codescout_mcp.ranking import ranked_structs

    Arguments = fastpath._type_for(fastpath.INPUT_SCHEMA, "arguments")
    Params = msgspec.defstruct("Params", [("name", Literal["rank_search_results"]), ("arguments", Arguments)],
                               forbid_unknown_fields=True, gc=False)
    Call = msgspec.defstruct("Call", [("jsonrpc", Literal["2.0"]), ("id", Union[int, str]),
                                      ("method", Literal["tools/call"]), ("params", Params)],
                             forbid_unknown_fields=True, gc=False)
    decoder = msgspec.json.Decoder(Call)

    def answer(holder):
        message = decoder.decode(holder[0])
        holder.clear()
        arguments = message.params.arguments
        return ranked_structs(arguments.hits, arguments.limit)

gc.collect()
gc.disable()
holder = [None]
tracemalloc.start()
holder[0] = bytes(body)  # the body as a server holds it, traced
del body
result = answer(holder)
peak = tracemalloc.get_traced_memory()[1]
assert result["counts"]["hits"] == count
print(json.dumps({"size": size, "peak": peak, "answer": result}))
"""


def one_way(count: int, way: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", ONE_WAY, str(count), way], capture_output=True, text=True, check=True, cwd=ROOT
    )
    measured: dict[str, object] = json.loads(done.stdout)
    return measured


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="2,000 hits: check the script runs")
    parser.add_argument("--hits", type=int, default=300_000, help="hits in the call (default 300,000)")
    options = parser.parse_args()
    count = 2_000 if options.smoke else options.hits
    today, structs = one_way(count, "today"), one_way(count, "structs")
    if today["answer"] != structs["answer"]:
        raise SystemExit("the two ways disagree on the answer")
    size = today["size"]
    assert isinstance(size, int)
    for name, measured in (("today's read", today), ("msgspec structs", structs)):
        peak = measured["peak"]
        assert isinstance(peak, int)
        print(f"{count:,}-hit tools/call ({size / 2**20:.1f} MiB): {name:<16} {peak / size:.2f} MiB per MiB of body")
    return 0


if __name__ == "__main__":
    sys.exit(main())
