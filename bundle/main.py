"""The codescout bundle's entry point: the MCP server on stdio, as `codescout-mcp` runs it."""

import sys

from codescout_mcp.cli import mcp_main

raise SystemExit(mcp_main(sys.argv[1:]))
