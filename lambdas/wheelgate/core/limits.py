"""How long the promoter and its fan-out state machine may take, and how often they retry:
the function's timeout and the leases, busy delays and retries derived from it."""

from __future__ import annotations

#: The promoter function's timeout (the Lambda maximum), which the stack sets and the
#: promoter's index-directory lease outlives.
PROMOTER_TIMEOUT_SECONDS = 15 * 60
#: How long an index directory's lease lasts: it outlives any invocation that could hold it
#: (the function's timeout), plus a minute for clock skew.
LEASE_SECONDS = PROMOTER_TIMEOUT_SECONDS + 60
#: A message whose index directory is leased by another promotion is made visible again after
#: this long (SQS ChangeMessageVisibility), instead of the queue's whole visibility timeout.
LEASE_BUSY_RETRY_SECONDS = 60
#: How long one invocation starts copies of an import's files into staging: the function's
#: timeout less 5 minutes for the copies still running (a 5 GiB server-side copy takes about
#: a minute) and the record. The rest is gathered by the next invocation, which the request's
#: event, sent back to the queue, starts.
IMPORT_GATHER_SECONDS = PROMOTER_TIMEOUT_SECONDS - 5 * 60
#: How often a gathering import writes its progress to its record (``wheelgate import`` shows
#: it as a progress bar).
IMPORT_PROGRESS_SECONDS = 10
#: The fan-out state machine's whole-execution timeout. An execution that times out runs no
#: catch step, so the index-directory leases it holds are taken for this long plus a margin.
FANOUT_TIMEOUT_SECONDS = 4 * 60 * 60
FANOUT_LEASE_SECONDS = FANOUT_TIMEOUT_SECONDS + 5 * 60
#: A message whose index directory is leased by a fan-out job is made visible again after this
#: long: the receives the manifest queue allows before its dead-letter queue (21, five of them
#: kept for other failures; ``MAX_RECEIVE_COUNT`` in stacks/promoter_function.py) outlast the
#: longest such lease (16 x 16 min >= ``FANOUT_LEASE_SECONDS``).
FANOUT_LEASE_BUSY_RETRY_SECONDS = 16 * 60
#: Retries of one file's copy (Step Functions Retry: attempts after the first, first interval,
#: backoff rate); local mode retries with the same numbers.
FANOUT_ITEM_RETRY_ATTEMPTS = 4
FANOUT_ITEM_RETRY_INTERVAL_SECONDS = 5
FANOUT_ITEM_RETRY_BACKOFF = 2.0
#: Failed executions of one manifest before its message goes to the dead-letter queue.
FANOUT_MAX_EXECUTIONS = 3
