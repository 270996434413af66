"""The release rules: what may join what nightly has released under one name and version. Pure.

- :class:`ReleaseBook`: the same release (project, version, tags) never twice with other
  bytes (``release-conflict``);
- :class:`LabelBook`: ``==<public version>`` never changes bytes through a local version label
  (``local-label-conflict``);
- :class:`TagBook`: ``==V`` never changes for any interpreter through a better-ranked tag
  (``tag-shadowing``, :mod:`wheelgate.core.shadowing`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from packaging.utils import BuildTag, parse_wheel_filename
from packaging.version import Version

from wheelgate.core.errors import PromotionRejected, Reason
from wheelgate.core.manifest import ArtifactSet, parse_distribution_filename
from wheelgate.core.shadowing import Shadowing, Wheel, shadowing


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
