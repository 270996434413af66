"""The import route's machinery: an import request (``manifests/import-*.json``) carried out.

One idea per module: the route itself is :mod:`wheelgate.promotion.routes.importing` (with the
other routes); here are gathering (:mod:`.gather`) and its record
(:mod:`.progress`), screening (:mod:`.screen`), what the service's flow is handed
(:mod:`.imported`), what the route and a dry run read alike (:mod:`.sources`) and the dry run
(:mod:`.preview`).

The service routes a request here after its writer check (the break-glass role only). In
order, every step before the first copy to nightly:

1. **Request.** Its directory must be configured and its source under an ``import_sources``
   entry (never a WheelGate bucket), before anything is read from the source.
2. **Gather.** One listing of the source prefix (:func:`~wheelgate.core.import_rules.select_files`)
   and one or two reads per project of the source's own index pages, if any
   (:func:`~.sources.read_source_page`: yank state, upload times, hashes). Each
   candidate is copied server-side into staging, ``runs/<import id>/<index>/<file>`` (where
   only the promoter writes), by a CopyObject that asks S3 for a SHA-256: S3 computes the
   file's hash, and no wheel byte passes through the promoter. A file over 5 GiB (a multipart
   copy, of which S3 keeps only a composite checksum) is read once from the source, the
   version the copy is then pinned to, and its hash kept in the copy's metadata (only the
   promoter writes ``runs/import-*``), so no later step reads it again. A file gathered before
   is never copied again; one whose source changed since is refused (``source-changed``). An
   invocation starts copies for ``IMPORT_GATHER_SECONDS``, writes its progress to the record
   and sends the request's event back to the queue: the next one goes on where it stopped.
3. **Screen**, file by file (a bad file is refused, the rest still imported): each wheel's
   METADATA and WHEEL, read with ranged reads of its staged copy (the wheel is what its name
   says, its METADATA readable); then :func:`~wheelgate.core.import_rules.screen` against
   nightly's archive pages and the files kept before it.
4. **Promote** the kept files as a run without tests: the route returns them to the service,
   whose flow verifies them under the directory's lease (every check of a run's set but the
   tests and the commit), copies them to nightly (through a fan-out execution past the
   thresholds, as any run), lists them with their source's upload times and yank states, and
   records each file ``imported`` from its source URI, with no evidence, beside the files
   refused and why.
"""
