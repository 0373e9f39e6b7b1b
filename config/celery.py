"""The Celery application: `celery -A config worker` finds it here.

Configuration comes from Django settings under the `CELERY_` namespace. Only JSON crosses the
broker; pickle is refused in both directions.
"""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("fanfold")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()  # the tasks modules of INSTALLED_APPS (runtime, bench)
