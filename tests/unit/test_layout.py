from __future__ import annotations

import pytest

from wheelgate.core.env_names import ENV_ALLOWED_INDEXES
from wheelgate.core.layout import (
    NIGHTLY,
    PAGES,
    STAGING,
    LayoutError,
    check_filename,
    check_index,
    check_index_dirs,
    check_run_id,
    href,
    key_url,
    quote_key,
    relative_href,
)
from wheelgate.core.setting_values import SettingsError
from wheelgate.core.settings import allowed_indexes_from_env


@pytest.mark.parametrize("index", ["v2/gfx94X-dcgpu", "cpu", "a/b/c/d", "rocm7.0+x"])
def test_valid_index_directories(index: str) -> None:
    assert check_index(index) == index


@pytest.mark.parametrize(
    "index",
    [
        "",
        "/v2",
        "v2/",
        "v2//x",
        "../v2",
        "v2/../x",
        "v2\\x",
        "v2/ x",
        "v2/gfx\u0131",  # dotless i: a look-alike
        "runs/x",
        "manifests",
        "records/a",
        "a/b/c/d/e",
        "v2/.hidden",
        "v2/x\x00",
    ],
)
def test_invalid_index_directories_are_refused(index: str) -> None:
    with pytest.raises(LayoutError, match="index directory"):
        check_index(index)


@pytest.mark.parametrize("run_id", ["", "..", "a/b", "a b", "-x", "a" * 129, "a\nb", "x..y"])
def test_invalid_run_ids_are_refused(run_id: str) -> None:
    with pytest.raises(LayoutError, match="run id"):
        check_run_id(run_id)


@pytest.mark.parametrize("name", ["", "a/b.whl", "a\\b.whl", "..", ".x.whl", "é.whl", "a\tb.whl"])
def test_invalid_filenames_are_refused(name: str) -> None:
    with pytest.raises(LayoutError):
        check_filename(name)


def test_keys_follow_the_documented_layout() -> None:
    assert STAGING.artifact("17", "v2/gfx94X-dcgpu", "t.whl") == "runs/17/v2/gfx94X-dcgpu/t.whl"
    assert STAGING.metadata("17", "cpu", "t.whl") == "runs/17/cpu/t.whl.metadata"
    assert STAGING.manifest("17") == "manifests/17.json"
    assert STAGING.record("17") == "records/17.json"
    assert STAGING.run_id_from_manifest_key("manifests/17.json") == "17"
    assert NIGHTLY.artifact("v2/gfx94X-dcgpu", "t.whl") == "v2/gfx94X-dcgpu/t.whl"
    assert PAGES.project_page("v2/gfx94X-dcgpu", "Torch_Vision") == (
        "v2/gfx94X-dcgpu/torch-vision/index.html"
    )
    assert PAGES.root_page("cpu", json=True) == "cpu/index.json"


@pytest.mark.parametrize("key", ["manifests/a/b.json", "runs/1.json", "manifests/.json"])
def test_non_manifest_keys_are_refused(key: str) -> None:
    with pytest.raises(LayoutError):
        STAGING.run_id_from_manifest_key(key)


def test_relative_hrefs_from_project_pages() -> None:
    page = PAGES.project_dir("v2/gfx94X-dcgpu", "torch")
    assert relative_href(page, NIGHTLY.artifact("v2/gfx94X-dcgpu", "t.whl")) == "../t.whl"
    assert (
        relative_href(page, STAGING.artifact("9", "v2/gfx94X-dcgpu", "t.whl"))
        == "../../../runs/9/v2/gfx94X-dcgpu/t.whl"
    )


@pytest.mark.parametrize(
    ("key", "written"),
    [
        # S3 reads a raw '+' as a space; uv requests hrefs as written.
        (
            "torch-2.7.0+rocm6.4-cp312-cp312-linux_x86_64.whl",
            "torch-2.7.0%2Brocm6.4-cp312-cp312-linux_x86_64.whl",
        ),
        ("a b.tar.gz", "a%20b.tar.gz"),
        ("a%2Bb.zip", "a%252Bb.zip"),  # a key's own '%' is a character, not an escape
        ("a#b.zip", "a%23b.zip"),  # would start the fragment
        ("a?b.zip", "a%3Fb.zip"),  # would start the query
        (
            "a&b=c;d,e:f@g!h$i'j(k)l*m[n]o.zip",
            "a%26b%3Dc%3Bd%2Ce%3Af%40g%21h%24i%27j%28k%29l%2Am%5Bn%5Do.zip",
        ),
        ("../v2/x-1.0_a~b.whl", "../v2/x-1.0_a~b.whl"),  # unreserved and '/' stay
    ],
)
def test_hrefs_percent_encode_every_reserved_character(key: str, written: str) -> None:
    assert quote_key(key) == written


def test_non_ascii_never_reaches_an_href() -> None:
    # The encoder need not decide how to spell other bytes: layout refuses them first.
    with pytest.raises(LayoutError):
        NIGHTLY.artifact("v2/gfx94X-dcgpu", "torch-2.7.0+rocm\u00e9-py3-none-any.whl")


def test_links_to_keys_are_relative_and_encoded_once() -> None:
    name = "torch-2.7.0+rocm6.4-cp312-cp312-linux_x86_64.whl"
    page = PAGES.project_dir("v2/gfx+x", "torch")
    assert href(page, NIGHTLY.artifact("v2/gfx+x", name)) == "../" + quote_key(name)
    assert href(page, STAGING.artifact("9", "v2/gfx+x", name)) == (
        "../../../runs/9/v2/gfx%2Bx/torch-2.7.0%2Brocm6.4-cp312-cp312-linux_x86_64.whl"
    )
    # An absolute URL: the base is a URL already, the key is encoded once.
    assert key_url("https://n.example/pre", "v2/gfx+x/torch/") == (
        "https://n.example/pre/v2/gfx%2Bx/torch/"
    )


def test_side_by_side_index_directories() -> None:
    dirs = ["v2/gfx94X-dcgpu", "v2/gfx94X-dcgpu-x", "v2/gfx950-dcgpu"]
    assert check_index_dirs(dirs) == tuple(dirs)


@pytest.mark.parametrize(
    ("dirs", "message"),
    [
        # D/torch next to D's project `torch` would overwrite D's page of that project.
        (["v2/gfx94X", "v2/gfx94X/torch"], "'v2/gfx94X/torch' is inside index directory"),
        (["v2/x/y/z", "v2"], "'v2/x/y/z' is inside index directory 'v2'"),
        (["v2/a", "v2/a"], "listed twice"),
        (["v2/a", "runs/a"], "reserves"),
    ],
)
def test_nested_or_repeated_index_directories_are_refused(dirs: list[str], message: str) -> None:
    with pytest.raises(LayoutError, match=message):
        check_index_dirs(dirs)


def test_the_allow_list_in_the_environment() -> None:
    assert allowed_indexes_from_env({}) == frozenset()
    env = {ENV_ALLOWED_INDEXES: '["v2/a", "v2/b"]'}
    assert allowed_indexes_from_env(env) == {"v2/a", "v2/b"}
    with pytest.raises(SettingsError, match=f"{ENV_ALLOWED_INDEXES}.*may not nest"):
        allowed_indexes_from_env({ENV_ALLOWED_INDEXES: '["v2", "v2/torch"]'})
    with pytest.raises(SettingsError, match="JSON list"):
        allowed_indexes_from_env({ENV_ALLOWED_INDEXES: '"v2/a"'})


@pytest.mark.parametrize("run_id", ["yank-1", "override-12345-x", "import-0123456789abcdef"])
def test_a_ci_run_may_not_take_a_requests_id(run_id: str) -> None:
    from wheelgate.core.layout import check_ci_run_id

    with pytest.raises(LayoutError, match="only requests to the promoter take"):
        check_ci_run_id(run_id)
    assert check_ci_run_id("16454515470") == "16454515470"
    assert check_ci_run_id("deps-0123456789ab-0123456789abcdef").startswith("deps-")
