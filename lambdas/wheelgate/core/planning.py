"""Promotion planning: check a set against what is staged and released, decide each copy. Pure."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from packaging.utils import BuildTag, parse_wheel_filename
from packaging.version import Version
from pydantic import BaseModel, ConfigDict

from wheelgate.core.errors import PromotionRejected, Reason
from wheelgate.core.layout import NIGHTLY, PAGE_NAMES, SIDECAR_SUFFIXES, STAGING
from wheelgate.core.manifest import ArtifactSet, ManifestFile, parse_distribution_filename
from wheelgate.core.objects import META_COMMIT, ObjectInfo
from wheelgate.core.shadowing import Shadowing, Wheel, shadowing


class Provenance(BaseModel):
    """Where an imported file came from, and what its source index said of it: it is released
    as ``imported`` from ``source`` (no test vouches for it), listed with the source's upload
    time and yank state."""

    model_config = ConfigDict(frozen=True)

    #: ``s3://bucket/key`` of the file the import read.
    source: str
    #: PEP 700 upload time to list it with (the source page's, else the object's date).
    upload_time: str
    #: PEP 592 yank state on the source's pages: ``False`` or the reason (maybe empty).
    yanked: str | bool = False


@dataclass(frozen=True)
class FileStep:
    """One file of a set: copy it, or it is already released with the same bytes.
    ``provenance`` is set for a file an import brings in.

    ``from_nightly``: the staged file is gone, and its bytes are the copy an earlier attempt
    made in nightly (S3's SHA-256 of that copy is the manifest's): ``source_key`` is then the
    nightly key, which is read instead of staging's (see :func:`plan_set`).
    """

    index: str
    file: ManifestFile
    source_key: str
    source_etag: str
    target_key: str
    copy: bool
    provenance: Provenance | None = None
    from_nightly: bool = False

    @property
    def is_wheel(self) -> bool:
        return self.file.filename.endswith(".whl")


@dataclass(frozen=True)
class SetPlan:
    index: str
    steps: tuple[FileStep, ...]

    @property
    def copies(self) -> tuple[FileStep, ...]:
        return tuple(s for s in self.steps if s.copy)


def checksum_mismatch(f: ManifestFile, staged_sha256: str, *, index: str) -> PromotionRejected:
    """The refusal of a staged file whose SHA-256 is not the manifest's: one wording, whether
    the hash came from S3's HEAD (planning) or from reading the bytes (a deferred hash read)."""
    return PromotionRejected(
        Reason.CHECKSUM_MISMATCH,
        f"{f.filename}: manifest sha256 {f.sha256} but staged object has {staged_sha256}",
        index=index,
    )


#: The commit of an import's files: none (they were built elsewhere, from no manifest's commit),
#: so planning checks no commit for them.
NO_COMMIT = ""


def plan_set(
    artifact_set: ArtifactSet,
    *,
    run_id: str,
    commit: str,
    staged: Mapping[str, ObjectInfo],
    released: Mapping[str, ObjectInfo | None],
    copied_before: Mapping[str, ObjectInfo] | None = None,
) -> SetPlan:
    """Verify one accepted set and plan its copies.

    ``staged`` maps every file name found under ``runs/<run_id>/<index>/`` to its HEAD (the
    run index's own root pages are not files of the set);
    ``released`` maps each listed file name to the HEAD of its nightly key (``None`` if absent).
    ``copied_before`` maps a listed file that is no longer staged to the HEAD of its nightly
    copy, made by an earlier attempt: it stands for the staged file (same checks: size, S3's
    SHA-256, commit) and the step reads it there (:attr:`FileStep.from_nightly`).

    Raises :class:`PromotionRejected` when a listed file is missing, an unlisted file is staged,
    a size or SHA-256 differs, the staged file's commit is not the manifest's (an import's,
    :data:`NO_COMMIT`, has none to check), or a nightly file of the same name has other bytes.
    """
    index = artifact_set.index
    listed = {f.filename for f in artifact_set.files}
    sidecars = {name + suffix for name in listed for suffix in SIDECAR_SUFFIXES}
    extra = sorted(
        name
        for name in staged
        if name not in listed and name not in sidecars and name not in PAGE_NAMES
    )
    if extra:
        raise PromotionRejected(
            Reason.FILE_NOT_LISTED,
            f"{len(extra)} file(s) staged for run {run_id} in {index!r} are not in the "
            f"manifest, e.g. {extra[0]!r}: the set would be incomplete",
            index=index,
        )
    steps = []
    copied_before = copied_before or {}
    for f in artifact_set.files:
        from_nightly = f.filename not in staged and f.filename in copied_before
        info = copied_before[f.filename] if from_nightly else staged.get(f.filename)
        key = STAGING.artifact(run_id, index, f.filename)
        if info is None:
            raise PromotionRejected(
                Reason.FILE_MISSING, f"{f.filename} is not staged at {key}", index=index
            )
        if info.size != f.size:
            raise PromotionRejected(
                Reason.SIZE_MISMATCH,
                f"{f.filename}: manifest says {f.size} bytes, staged object has {info.size}",
                index=index,
            )
        # S3's own checksum of the bytes it stores, never user metadata (any writer of the
        # object can set that to anything).
        if info.s3_sha256 is None:
            raise PromotionRejected(
                Reason.CHECKSUM_UNAVAILABLE,
                f"{f.filename}: S3 has no SHA-256 of the staged object (stage it with "
                "wheelgate stage)",
                index=index,
            )
        if info.s3_sha256 != f.sha256:
            raise checksum_mismatch(f, info.s3_sha256, index=index)
        staged_commit = info.metadata.get(META_COMMIT)
        if commit != NO_COMMIT and staged_commit != commit:
            raise PromotionRejected(
                Reason.COMMIT_MISMATCH,
                f"{f.filename} was staged from commit {staged_commit or '(none)'}, "
                f"the manifest is for {commit}",
                index=index,
            )
        target = NIGHTLY.artifact(index, f.filename)
        existing = released.get(f.filename)
        if existing is not None and (existing.sha256 != f.sha256 or existing.size != f.size):
            raise PromotionRejected(
                Reason.NIGHTLY_CONFLICT,
                f"{target} already exists in nightly with other bytes "
                f"(sha256 {existing.sha256}); released files are never overwritten",
                index=index,
            )
        steps.append(
            FileStep(
                index=index,
                file=f,
                source_key=target if from_nightly else key,
                source_etag=info.etag,
                target_key=target,
                copy=existing is None,
                from_nightly=from_nightly,
            )
        )
    return SetPlan(index=index, steps=tuple(steps))


@dataclass(frozen=True)
class Release:
    """What installers treat as one release of a file: the normalized project name, the PEP
    440 version and, for a wheel, its expanded tag set (an sdist is the release's source).
    Two file names of one release (``alias-1.0`` and ``alias-1.0.0``, or another build tag)
    are one thing to ``pip install alias==1.0``."""

    project: str
    version: Version
    tags: frozenset[str]

    @classmethod
    def of(cls, filename: str) -> tuple[Release, BuildTag]:
        """The release a file name belongs to, and its wheel build tag (``()`` when none)."""
        if filename.endswith(".whl"):
            name, version, build, tags = parse_wheel_filename(filename)
            return cls(name, version, frozenset(map(str, tags))), build
        dist = parse_distribution_filename(filename)
        return cls(dist.project, dist.version, frozenset({"sdist"})), ()


class ReleaseBook:
    """The releases known so far (file name, SHA-256 and build tag of each file), to tell
    whether one more file would re-release one of them with other bytes: another spelling of
    its version, or another build tag unless ``allow_build_tag_rereleases``. A file released
    under its own name is :func:`plan_set`'s to judge."""

    def __init__(self, *, allow_build_tag_rereleases: bool) -> None:
        self.allow_build_tag_rereleases = allow_build_tag_rereleases
        self._known: dict[Release, list[tuple[str, str, BuildTag]]] = {}

    def add(self, filename: str, sha256: str) -> None:
        """Know ``filename``; a name that is not a distribution's is no release, and ignored."""
        try:
            release, build = Release.of(filename)
        except ValueError:
            return
        self._known.setdefault(release, []).append((filename, sha256, build))

    def conflicting(self, filename: str, sha256: str) -> str | None:
        """The first known file of ``filename``'s release under another name with other bytes
        than ``sha256``, if any."""
        release, build = Release.of(filename)
        for name, sha, other_build in self._known.get(release, []):
            if name == filename or sha == sha256:
                continue
            if self.allow_build_tag_rereleases and other_build != build:
                continue
            return name
        return None

    @staticmethod
    def refusal(filename: str, other: str, *, index: str) -> PromotionRejected:
        """The refusal (``release-conflict``) of ``filename``, a release of ``other``."""
        release, _ = Release.of(filename)
        return PromotionRejected(
            Reason.RELEASE_CONFLICT,
            f"{filename} is release {release.project} {release.version} "
            f"({', '.join(sorted(release.tags))}) of {other}, which has other bytes: "
            f"`pip install {release.project}=={release.version}` would change what it "
            "installs",
            index=index,
        )

    def conflict(self, filename: str, sha256: str, *, index: str) -> PromotionRejected | None:
        """The refusal of ``filename`` with bytes ``sha256`` when it would re-release a known
        release under another name (:meth:`conflicting`); ``None`` when it would not."""
        other = self.conflicting(filename, sha256)
        return None if other is None else self.refusal(filename, other, index=index)


def check_release_conflicts(
    artifact_set: ArtifactSet,
    released: Iterable[tuple[str, str]],
    *,
    allow_build_tag_rereleases: bool,
    allow_new_local_labels: bool = False,
) -> None:
    """Refuse a set that would re-release a release with other bytes, or change what a
    version's ``==`` pin installs.

    ``released`` are (file name, SHA-256) of the files nightly already lists for the set's
    projects. A set file is refused when a released file, or another file of the set, is the
    same :class:`Release` under another name with other bytes (see :class:`ReleaseBook`).
    It checks :func:`check_local_labels` (with ``allow_new_local_labels``) first, and last
    that no wheel joining a released version would be what some interpreter installs instead
    of a released wheel (:class:`TagBook`, with ``allow_build_tag_rereleases``).

    Raises :class:`PromotionRejected` (``release-conflict``, ``local-label-conflict`` or
    ``tag-shadowing``) naming the first conflict.
    """
    released = tuple(released)
    check_local_labels(
        artifact_set,
        [name for name, _sha in released],
        allow_new_local_labels=allow_new_local_labels,
    )
    book = ReleaseBook(allow_build_tag_rereleases=allow_build_tag_rereleases)
    for filename, sha256 in released:
        book.add(filename, sha256)
    for f in artifact_set.files:
        refusal = book.conflict(f.filename, f.sha256, index=artifact_set.index)
        if refusal is not None:
            raise refusal
        book.add(f.filename, f.sha256)
    tags = TagBook(released, allow_build_tag_rereleases=allow_build_tag_rereleases)
    for f in artifact_set.files:
        shadows = tags.conflict(f.filename, f.sha256, index=artifact_set.index)
        if shadows is not None:
            raise shadows


def _public_and_label(filename: str) -> tuple[tuple[str, Version], str | None]:
    """``((project, public version), local label or None)`` of a distribution file."""
    dist = parse_distribution_filename(filename)
    return (dist.project, Version(dist.version.public)), dist.version.local


class LabelBook:
    """The local version labels each public version has so far, to tell whether one more file
    would change what ``pip install <project>==<public version>`` installs.

    PEP 440 ``==1.0`` matches ``1.0+anything``, and pip and uv prefer the highest local
    version. ``released`` are the file names nightly already holds. Per project and public
    version:

    - released without a local label (``lab-1.0``): it never gains a labelled file
      (``lab-1.0+evil`` would become what ``==1.0`` installs);
    - released with local labels only (``2.7.0+rocm6.3``): it never gains an unlabelled file
      (a build of another kind, which ``==2.7.0`` would install wherever the labelled builds do
      not), and gains a new label (``+rocm6.4``, then what ``==2.7.0`` installs) only with
      ``allow_new_local_labels``; a released label may gain files for other tags;
    - a version first released now (files :meth:`add` ed since) may carry several labels, or
      none, not both.
    """

    def __init__(self, released: Iterable[str], *, allow_new_local_labels: bool) -> None:
        self.allow_new_local_labels = allow_new_local_labels
        self._before: dict[tuple[str, Version], dict[str | None, str]] = {}
        for filename in released:
            try:
                version, label = _public_and_label(filename)
            except ValueError:
                continue
            self._before.setdefault(version, {}).setdefault(label, filename)
        self._seen = {version: dict(labels) for version, labels in self._before.items()}

    def add(self, filename: str) -> None:
        """Know ``filename`` (kept, or released by this set)."""
        version, label = _public_and_label(filename)
        self._seen.setdefault(version, {}).setdefault(label, filename)

    def conflict(self, filename: str, *, index: str) -> PromotionRejected | None:
        """The refusal (``local-label-conflict``) of ``filename``, or ``None``."""
        (project, public), label = _public_and_label(filename)
        labels = self._seen.get((project, public), {})
        pin = f"`pip install {project}=={public}`"
        if label is not None and None in labels:
            return PromotionRejected(
                Reason.LOCAL_LABEL_CONFLICT,
                f"{filename}: {project} {public} has a file without a local version label "
                f"({labels[None]}); {pin} matches {public}+{label} too and installers prefer "
                "it, so the bytes every such pin installs would change. A public version "
                "released without a label never gains one: release a new version",
                index=index,
            )
        if label is None and labels and None not in labels:
            named = ", ".join(f"+{other}" for other in sorted(filter(None, labels)))
            return PromotionRejected(
                Reason.LOCAL_LABEL_CONFLICT,
                f"{filename}: {project} {public} has files with local version label(s) "
                f"{named} only; an unlabelled file is another kind of build, which {pin} "
                "would install wherever those are not installable. A public version released "
                "with labels never gains an unlabelled file",
                index=index,
            )
        known = self._before.get((project, public), {})
        if label is not None and known and label not in known and not self.allow_new_local_labels:
            named = ", ".join(f"+{other}" for other in sorted(filter(None, known)))
            return PromotionRejected(
                Reason.LOCAL_LABEL_CONFLICT,
                f"{filename}: {project} {public} is released with local version label(s) "
                f"{named}, not +{label}: {pin} would install the new build where its label "
                f"sorts highest. New labels of a released version are allowed only where "
                f"allow_new_local_labels lists the directory ({index!r})",
                index=index,
            )
        return None


def check_local_labels(
    artifact_set: ArtifactSet, released: Iterable[str], *, allow_new_local_labels: bool
) -> None:
    """Refuse a set with a file that would change what ``pip install <project>==<public
    version>`` installs through a local version label (the rule: :class:`LabelBook`);
    ``released`` are the file names nightly already holds for the set's projects.

    Raises :class:`PromotionRejected` (``local-label-conflict``) naming the first conflict.
    """
    book = LabelBook(released, allow_new_local_labels=allow_new_local_labels)
    for f in artifact_set.files:
        refusal = book.conflict(f.filename, index=artifact_set.index)
        if refusal is not None:
            raise refusal
        book.add(f.filename)


class TagBook:
    """The wheels each released version has, to tell whether one more wheel would change what
    ``pip install <project>==<version>`` installs on some interpreter (the rule:
    :func:`~wheelgate.core.shadowing.shadowing`). A version is the project and the PEP 440
    version with its local label (``2.0+rocm6.3``): what ``==`` picks among the highest
    matching version. ``released`` are (file name, SHA-256) of every file nightly ever released
    for the projects, yanked and delisted ones too.

    Only released wheels are judged against: files arriving together (a set, an import) are
    their version's first release, whatever their tags, and a file released under its own
    name is :func:`plan_set`'s to judge. An sdist is neither judged nor judged against:
    installers take any wheel that fits before it. ``allow_build_tag_rereleases`` lets a
    higher build tag decide where the tags rank level (the deployment lets a release be
    rebuilt), never a better tag.
    """

    def __init__(
        self, released: Iterable[tuple[str, str]], *, allow_build_tag_rereleases: bool
    ) -> None:
        self.allow_build_tag_rereleases = allow_build_tag_rereleases
        self._names: set[str] = set()
        self._wheels: dict[tuple[str, Version], list[Wheel]] = {}
        for filename, sha256 in released:
            self._names.add(filename)
            wheel = _wheel(filename, sha256)
            if wheel is not None:
                self._wheels.setdefault((wheel.project, wheel.version), []).append(wheel)

    def conflict(
        self, filename: str, sha256: str | None, *, index: str
    ) -> PromotionRejected | None:
        """The refusal (``tag-shadowing``) of ``filename`` with bytes ``sha256`` (``None``:
        not known, as in a dry run), or ``None``."""
        wheel = None if filename in self._names else _wheel(filename, sha256)
        if wheel is None:
            return None
        released = self._wheels.get((wheel.project, wheel.version), [])
        found = shadowing(
            wheel, released, allow_build_tag_rereleases=self.allow_build_tag_rereleases
        )
        return None if found is None else self.refusal(wheel, found, index=index)

    @staticmethod
    def refusal(wheel: Wheel, found: Shadowing, *, index: str) -> PromotionRejected:
        """The refusal (``tag-shadowing``) of ``wheel``, which ``found`` says an interpreter
        would install instead of a released wheel: it names both, the interpreter and why."""
        interpreter = found.interpreter
        why = {
            "tag": f"{found.new_tag} ranks before {found.released_tag} there",
            "build tag": (
                f"{found.new_tag} ranks level with {found.released_tag} there and its build tag "
                "is higher, which may decide only where allow_build_tag_rereleases is set"
            ),
            "tie": (
                f"{found.new_tag} ranks level with {found.released_tag} there under the same "
                "build tag, so the index's order decides"
            ),
        }[found.how]
        return PromotionRejected(
            Reason.TAG_SHADOWING,
            f"{wheel.filename}: `pip install {wheel.project}=={wheel.version}` would change "
            f"what it installs: {interpreter.installer} on {interpreter.tag}, for one, would "
            f"install {wheel.filename} instead of {found.released}, released before ({why}). A "
            "released version gains a wheel only where no interpreter that installed one of "
            "its wheels would switch to it: release this one as a new version",
            index=index,
        )


def _wheel(filename: str, sha256: str | None) -> Wheel | None:
    """``filename`` as installers compare wheels, or ``None`` when it is not a wheel's."""
    if not filename.endswith(".whl"):
        return None
    try:
        return Wheel.of(filename, sha256)
    except ValueError:
        return None
