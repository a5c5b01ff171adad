from codescout_mcp.cli import main

raise SystemExit(main())
