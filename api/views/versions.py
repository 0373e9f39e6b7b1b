"""Deployment versions: what each has in flight, and checked upgrades (docs/deploying.md)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.generics import GenericAPIView
from rest_framework.request import Request
from rest_framework.response import Response

from api.views.docs import AUTH_ERRORS, errors
from runtime.access import actor_of, check_version_upgrade
from runtime.deploy.upgrades import upgrade
from runtime.observe.versions import version_rows

VERSION = OpenApiParameter("version", OpenApiTypes.STR, OpenApiParameter.PATH)


class VersionSerializer(serializers.Serializer[Any]):
    version = serializers.CharField(help_text='the version ("" for runs older than versions)')
    current = serializers.BooleanField(help_text="whether it is this process's version")
    pending = serializers.IntegerField()
    running = serializers.IntegerField()
    waiting = serializers.IntegerField()
    stranded = serializers.IntegerField(help_text="runs in flight no live worker serves")
    workers = serializers.ListField(child=serializers.CharField(), help_text="seen lately")


class UpgradeSerializer(serializers.Serializer[Any]):
    to = serializers.CharField(required=False, max_length=64, help_text="default: this version")
    dry_run = serializers.BooleanField(required=False, default=False)


class VersionListView(GenericAPIView[Any]):
    serializer_class = VersionSerializer
    pagination_class = None

    @extend_schema(
        operation_id="versions_list",
        responses={200: VersionSerializer(many=True), **errors(*AUTH_ERRORS)},
        summary="Every version with runs in flight or workers: counts, workers, stranded runs",
    )
    def get(self, request: Request) -> Response:
        check_version_upgrade(request.user)
        return Response(VersionSerializer(version_rows(), many=True).data)


class VersionUpgradeView(GenericAPIView[Any]):
    serializer_class = UpgradeSerializer

    @extend_schema(
        operation_id="versions_upgrade",
        parameters=[VERSION],
        request=UpgradeSerializer,
        responses={200: OpenApiResponse(OpenApiTypes.OBJECT), **errors(*AUTH_ERRORS, 400)},
        summary="Move the in-flight runs of a version whose histories replay clean here",
    )
    def post(self, request: Request, version: str) -> Response:
        check_version_upgrade(request.user)
        body = UpgradeSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        result = upgrade(
            version,
            body.validated_data.get("to"),
            dry_run=body.validated_data["dry_run"],
            by=actor_of(request.user),
        )
        return Response(result.as_dict())
