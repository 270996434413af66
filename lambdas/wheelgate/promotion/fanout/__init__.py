"""Fan-out promotion: a set too large for one invocation, copied by a state machine.

One idea per module: the job and its names (:mod:`.job`), its objects in staging (:mod:`.store`),
the promoter's side (:mod:`.jobs`), the execution's steps (:mod:`.steps`) and what starts an
execution or re-queues an event (:mod:`.ports`).

The promoter checks a run exactly as for a small set (acceptance, verification, under the
index-directory leases). When the copies reach a threshold (:meth:`.jobs.FanoutJobs.wanted`), it
writes a job instead of copying: the verified plan and everything the record needs
(``records/_jobs/<job_id>/plan.json``), one Map item per planned file (``items.json``) and the
items whose staged bytes S3 has no SHA-256 of (``hash_items.json``, maybe empty); hands its
leases over to the job; records the run PENDING, naming the execution; and starts the
execution. The same promoter function then runs the execution's steps
(:meth:`.steps.FanoutSteps.step`):

- ``hash`` one item: read its staged file once (the version verification pinned) and check its
  SHA-256 against the manifest's (verification planned it on the manifest's provisionally).
  Every ``hash`` step ends before the first ``copy`` starts: the promise "every check before
  the first copy" holds for a fan-out promotion too, and the promoter's own invocation reads no
  file in full.
- ``copy`` one item: copy the file, verify the copy, release its core metadata, sign and write
  its verdict (:mod:`~wheelgate.promotion.verdicts`), and write the item's done marker (its
  page entry). A done item returns at once.
- ``publish``: with every item done, publish the nightly pages, invalidate them, record the run
  PROMOTED (the record a single invocation writes) and give the leases back.
- ``conclude`` a failed execution: a permanent refusal records the run REJECTED; anything else
  records a pending failure and sends the manifest's event back to the queue (a new execution,
  after a new verification), or after ``FANOUT_MAX_EXECUTIONS`` to the dead-letter queue. The
  leases are given back either way.

A step that refuses permanently raises :class:`~wheelgate.core.errors.PromotionRejected` (the
state machine does not retry it) after writing the refusal to the job: a failed Distributed Map
reports its own error name, not its item's, so the concluding step reads the reason there.
"""
