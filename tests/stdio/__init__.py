"""The MCP server over stdio: client sessions, raw pipes, greedy clients, its first moments and its stop."""
