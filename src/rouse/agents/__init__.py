"""The edges towards agent tools: wiring, session-start hooks, the MCP server."""
