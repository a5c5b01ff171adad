"""codescout speaking MCP itself: the protocol versions, JSON-RPC, the catalog, the SDK's words, a
host's first requests and the door that says who answers each one. The SDK is imported only
inside a function, so the stdio transport can use all of this while the SDK loads.

May import: core, system.
"""
