from codescout_mcp.cli.entry import codescout

raise SystemExit(codescout())
