"""The names local mode gives what the stack would create: buckets, queues, region, the role
ids its promoter trusts, its state machine."""

from __future__ import annotations

from wheelgate.core.layout import MANIFESTS_PREFIX, MIRROR_RUN_PREFIX

STAGING_BUCKET = "wheelgate-staging"
NIGHTLY_BUCKET = "wheelgate-nightly"
QUEUE_NAME = "wheelgate-manifests"
DLQ_NAME = "wheelgate-manifests-dlq"
REGION = "us-east-1"
#: Unique id the local reporter role would have; the event loop stamps it on manifest events.
LOCAL_REPORTER_ID = "AROALOCALREPORTER0001"
LOCAL_REPORTER_PRINCIPAL = f"AWS:{LOCAL_REPORTER_ID}:wheelgate-local"
#: The same for the dependency-mirror role, which alone writes ``manifests/deps-*``.
LOCAL_DEPS_ID = "AROALOCALDEPS00000001"
LOCAL_DEPS_PRINCIPAL = f"AWS:{LOCAL_DEPS_ID}:wheelgate-local"
MIRROR_MANIFEST_PREFIX = f"{MANIFESTS_PREFIX}{MIRROR_RUN_PREFIX}"
#: The state machine local mode names: its executions run in the promoter's process.
LOCAL_FANOUT_STATE_MACHINE = f"arn:aws:states:{REGION}:000000000000:stateMachine:wheelgate-fanout"
#: After this many failed receives a message moves to the DLQ: fewer than the stack's five
#: (``stacks/promoter_function.py``), so a poison message reaches the local DLQ within seconds.
MAX_RECEIVE_COUNT = 3
#: The break-glass role's (``wheelgate local --break-glass``): the only writer of override and
#: import requests. Its clients sign with :data:`LOCAL_BREAK_GLASS_KEY` (moto reads the access
#: key of each request, 20 capitals and digits; not ``AKIA...``, which the CLI's output masks as
#: a credential), which local mode tells apart from the reporter's (:mod:`wheelgate.local.writers`).
LOCAL_BREAK_GLASS_ID = "AROALOCALBREAKGLASS01"
LOCAL_BREAK_GLASS_PRINCIPAL = f"AWS:{LOCAL_BREAK_GLASS_ID}:wheelgate-local"
LOCAL_BREAK_GLASS_KEY = "LOCALBREAKGLASSKEY01"
#: The variable of local mode's environment holding :data:`LOCAL_BREAK_GLASS_KEY`:
#: ``promote --override`` and ``import`` sign with it when it is set (local mode only).
ENV_LOCAL_BREAK_GLASS_KEY = "WHEELGATE_LOCAL_BREAK_GLASS_KEY"
