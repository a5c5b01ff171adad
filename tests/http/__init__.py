"""The MCP server over streamable HTTP: real sockets, greedy clients, TLS, and replicas behind real proxies."""
