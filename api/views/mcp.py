"""`/api/mcp/`: the MCP server (extra `fanfold[mcp]`) over streamable HTTP, for the request's
authenticated user (api.mcp.http). Without the extra installed it answers 501, saying so."""

from __future__ import annotations

import importlib.util
from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.mcp.http import forward


def _installed() -> bool:
    return importlib.util.find_spec("mcp") is not None


@extend_schema(exclude=True)  # JSON-RPC of the Model Context Protocol, not REST
class McpView(APIView):
    def post(self, request: Request) -> Any:
        if not _installed():
            return Response(
                {"error": {"code": "not_installed", "message": "install fanfold[mcp]"}},
                status=status.HTTP_501_NOT_IMPLEMENTED,
            )
        return forward(request, request.user)

    get = delete = post
