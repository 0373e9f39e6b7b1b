"""The MCP server (extra `fanfold[mcp]`): find and act on runs from an assistant.

`tools` holds what each tool does, under the calling user's rights, with no MCP import;
`server` builds the MCP server on the official SDK (imported only when it is served: by
`manage.py fanfold mcp` over stdio, and by `/api/mcp/` over streamable HTTP).
"""
