from codescout_mcp.entry import codescout

raise SystemExit(codescout())
