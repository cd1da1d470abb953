"""``sleuth serve --http``: MCP over streamable HTTP for a team, with bearer tokens per user."""
