"""The codescout bundle's entry point: the MCP server on stdio, as `codescout-mcp` runs it."""

from codescout_mcp.cli.entry import codescout_mcp

raise SystemExit(codescout_mcp())
