"""Request and response shapes of the REST API (also the source of the OpenAPI document).

By what they describe: `runs`, `history` (steps and events), `callbacks`, `workflows` (and
schedules) and `errors`. Views import them from here; the settings name
`api.serializers.CALLBACK_STATUSES` and `PARAMETER_KINDS` for the document's enum names.
"""

from __future__ import annotations

from api.serializers.callbacks import (
    CALLBACK_STATUSES,
    CallbackErrorSerializer,
    CallbackPostSerializer,
    CallbackReceiptSerializer,
    CallbackTokenPostSerializer,
)
from api.serializers.errors import (
    ErrorBodySerializer,
    ErrorSerializer,
)
from api.serializers.history import (
    EventSerializer,
    StepSerializer,
    StepSummarySerializer,
)
from api.serializers.runs import (
    ForkRunSerializer,
    RunDetailSerializer,
    RunSerializer,
    RunSummarySerializer,
    StartRunSerializer,
    StepCountsSerializer,
)
from api.serializers.workflows import (
    PARAMETER_KINDS,
    ScheduleSerializer,
    WorkflowParameterSerializer,
    WorkflowScheduleSerializer,
    WorkflowSerializer,
)

__all__ = [
    "CALLBACK_STATUSES",
    "PARAMETER_KINDS",
    "CallbackErrorSerializer",
    "CallbackPostSerializer",
    "CallbackReceiptSerializer",
    "CallbackTokenPostSerializer",
    "ErrorBodySerializer",
    "ErrorSerializer",
    "EventSerializer",
    "ForkRunSerializer",
    "RunDetailSerializer",
    "RunSerializer",
    "RunSummarySerializer",
    "ScheduleSerializer",
    "StartRunSerializer",
    "StepCountsSerializer",
    "StepSerializer",
    "StepSummarySerializer",
    "WorkflowParameterSerializer",
    "WorkflowScheduleSerializer",
    "WorkflowSerializer",
]
