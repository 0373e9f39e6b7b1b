"""Fanfold's Django project package: settings, URLs and the Celery app."""

from __future__ import annotations

from config.celery import app as celery_app

__all__ = ["celery_app"]
