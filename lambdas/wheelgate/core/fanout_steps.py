"""How the fan-out state machine and the promoter function speak: the field naming a step in
the function's event and the error name the state machine does not retry."""

from __future__ import annotations

#: The promoter function also runs the state machine's steps: an event with this field names
#: the step (``copy``, ``publish`` or ``conclude``) instead of carrying SQS records.
FANOUT_STEP_FIELD = "fanout_step"
#: Error name (the Python exception class) of a permanent refusal in a step: the state machine
#: does not retry it.
FANOUT_REJECTED_ERROR = "PromotionRejected"
