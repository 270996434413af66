"""AWS quotas the promoter stays under (KMS signing rate, Step Functions map concurrency),
and the shares of them its parts take."""

from __future__ import annotations

#: The most child executions a Distributed Map runs at once (a hard Step Functions quota).
MAX_MAP_CONCURRENCY = 10_000
#: AWS KMS's "Cryptographic operations (ECC) request rate": Sign requests per second with ECC
#: keys, shared by every ECC key of the account and region (adjustable; the default).
KMS_ECC_REQUESTS_PER_SECOND = 300
#: Verdict signatures per second of one promoter invocation (a single invocation's promotion),
#: and of every fan-out copy step that runs at once together. At most 2 invocations (the event
#: source's maximum concurrency) and the copy map's steps run at once: 2 x 45 + 200 = 290,
#: under KMS_ECC_REQUESTS_PER_SECOND whatever the copy concurrency (tests/unit/test_verdicts.py
#: holds the sum to it). A copy step signs once, after copying a file of gigabytes, so its share
#: (:func:`fanout_step_signs_per_second`) only bounds a burst of small files.
VERDICT_SIGNS_PER_SECOND_PROMOTION = 45
VERDICT_SIGNS_PER_SECOND_FANOUT = 200


def fanout_step_signs_per_second(copy_concurrency: int) -> float:
    """One fan-out copy step container's signing rate when ``copy_concurrency`` steps run at
    once: an equal share of ``VERDICT_SIGNS_PER_SECOND_FANOUT``."""
    return VERDICT_SIGNS_PER_SECOND_FANOUT / max(1, copy_concurrency)
