"""The MCP server and its tool families (thin adapters from the seeds' contracts to the engine)."""
