"""AWS quotas the promoter stays under (KMS signing rate, Step Functions map concurrency),
and the shares of them its parts take."""

from __future__ import annotations

#: The most child executions a Distributed Map runs at once (a hard Step Functions quota).
MAX_MAP_CONCURRENCY = 10_000
#: AWS KMS's "Cryptographic operations (ECC) request rate": Sign requests per second with ECC
#: keys, shared by every ECC key of the account and region (adjustable; the default).
KMS_ECC_REQUESTS_PER_SECOND = 300
#: Verdict signatures per second of one promoter invocation (a single invocation's promotion),
#: and of a fan-out execution's publish step, which signs the verdicts of its whole promoted
#: set (copy steps sign nothing). At most 2 invocations (the event source's maximum
#: concurrency) and one publish step run at once in the budget: 2 x 45 + 200 = 290, under
#: KMS_ECC_REQUESTS_PER_SECOND (tests/unit/test_verdicts.py holds the sum to it). Publish
#: steps of executions in other directories that happen to sign in the same seconds ride on
#: the KMS client's adaptive retries (docs/verdicts.md, Cost).
VERDICT_SIGNS_PER_SECOND_PROMOTION = 45
VERDICT_SIGNS_PER_SECOND_FANOUT = 200
