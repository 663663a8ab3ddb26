"""Refusals are cheap and counted: a JSON bundle's size is checked before it is parsed, refused uploads count
against the rate limit, bad fields get 400 before the rate limit's 429, and bodies and query strings that
must not be read are refused at the door."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from leaderboard.models import Submission
from leaderboard.submissions.bundles import MAX_JSON_DEPTH, MAX_JSON_VALUES, BundleError, check_bundle
from leaderboard.submissions.tokens import issue_token
from tests.submissions.samples import TORCH_RELU_KERNEL, kernel_name, zip_bytes

KNOWN = {"level_1_problem_1"}


def refusal(data: bytes) -> list[str]:
    with pytest.raises(BundleError) as raised:
        check_bundle(data, "b.json", KNOWN, "builtin")
    return raised.value.problems


def test_a_json_of_a_million_tiny_keys_is_refused_by_counting_not_parsing():
    keys = {f"level_1_problem_{n // 1000}_sample_{n % 1000}": "x = 1" for n in range(100_000)}
    document = json.dumps({"kernels": keys}).encode()
    # Well-formed, and every key of the kernel form: only the count before parsing refuses it like this.
    assert refusal(document) == [
        f"the JSON holds more than {MAX_JSON_VALUES} strings; at most that many values are read"
    ]


def test_strings_hidden_behind_escaped_backslashes_are_still_counted():
    keys = b",".join(b'"k%d\\\\": 1' % n for n in range(3 * MAX_JSON_VALUES))
    assert "strings" in refusal(b'{"kernels": {' + keys + b"}}")[0]


@pytest.mark.parametrize(
    "document",
    [
        b'{"kernels": {}, "metadata": [' + b",".join([b"1"] * (MAX_JSON_VALUES + 1)) + b"]}",
        b"[" * (MAX_JSON_VALUES + 1),
    ],
    ids=["numbers", "brackets"],
)
def test_too_many_values_or_containers_are_refused_before_parsing(document):
    assert "keys, values or objects" in refusal(document)[0]


def test_escaped_quotes_that_never_close_are_refused_as_not_json():
    """A string of 200,000 escaped quotes that never ends: found by one linear scan (a regular expression for
    JSON strings backtracks for minutes over a few kilobytes of these)."""
    [problem] = refusal(b'{"kernels": {"level_1_problem_1_sample_0": "' + b'\\"' * 200_000)
    assert problem.startswith("not valid UTF-8 JSON (Unterminated string")


def test_nesting_is_bounded():
    deep = b'{"kernels": {}, "metadata": ' + b"[" * MAX_JSON_DEPTH + b"]" * MAX_JSON_DEPTH + b"}"
    assert f"nested {MAX_JSON_DEPTH + 1} deep" in refusal(deep)[0]


def test_brackets_commas_and_quotes_inside_sources_do_not_count():
    source = TORCH_RELU_KERNEL + "\n# " + '[{",:\\"}]' * 5000 + "\n"
    document = json.dumps({"kernels": {"level_1_problem_1_sample_0": source}}).encode()
    bundle = check_bundle(document, "b.json", KNOWN, "builtin")
    assert [kernel.file_name for kernel in bundle.kernels] == ["level_1_problem_1_sample_0_kernel.py"]


@pytest.fixture
def token(user, settings, tasks_l1):
    settings.SUBMISSION_QUOTAS = {"per_minute": 2, "active": 10, "per_day": 10}
    return issue_token(user)[1]


def post(client, token, bundle: bytes, **fields):
    data = {"bundle": SimpleUploadedFile("b.zip", bundle), "method": "Refused", "hardware": "CPU", **fields}
    return client.post("/api/submissions", data, HTTP_AUTHORIZATION=f"Bearer {token}")


GOOD = zip_bytes({kernel_name(1, 1): TORCH_RELU_KERNEL})


@pytest.mark.django_db(transaction=True)
def test_refused_uploads_count_against_the_rate_limit(client, token, redis_conn):
    assert post(client, token, b"not a bundle").status_code == 400
    assert post(client, token, GOOD, suite="nope").status_code == 400  # a bad field
    response = post(client, token, GOOD)
    assert response.status_code == 429, response.content
    assert "refused ones included" in response.json()["error"]
    assert response["Retry-After"] == "60"
    assert not Submission.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_bad_fields_get_400_before_the_rate_limits_429(client, token, redis_conn):
    assert post(client, token, GOOD).status_code == 201
    assert post(client, token, GOOD + b"").status_code == 201
    over = post(client, token, b"not a bundle")
    assert over.status_code == 429  # over the limit: the bundle is not read at all
    bad_fields = post(client, token, GOOD, method_kind="nonsense")
    assert bad_fields.status_code == 400
    assert "method_kind" in bad_fields.json()["error"]


@pytest.mark.django_db(transaction=True)
def test_the_upload_form_counts_its_refusals_too(client, user, token, cpu, redis_conn):
    client.force_login(user)
    fields = {"new_method": "Form", "hardware": str(cpu.pk), "suite": "builtin"}
    for _ in range(2):
        response = client.post("/submit/", {**fields, "bundle": SimpleUploadedFile("b.zip", b"junk")})
        assert response.status_code == 400
    response = client.post("/submit/", {**fields, "bundle": SimpleUploadedFile("b.zip", GOOD)})
    assert response.status_code == 429
    assert not Submission.objects.exists()


@pytest.mark.django_db
def test_a_body_over_the_form_limit_is_refused_unread_on_other_paths(client):
    response = client.post(
        "/accounts/login/", b"", content_type="application/x-www-form-urlencoded", CONTENT_LENGTH=str(1 << 30)
    )
    assert response.status_code == 413
    assert b"at most" in response.content


@pytest.mark.django_db
def test_a_chunked_body_is_refused_with_411(client):
    response = client.post(
        "/api/submissions", b"", content_type="text/plain", HTTP_TRANSFER_ENCODING="chunked"
    )
    assert response.status_code == 411
    assert "Content-Length" in response.json()["error"]


@pytest.mark.django_db
@pytest.mark.parametrize("url", ["/", "/tasks/", "/accounts/login/", "/api/levels", "/submissions/1/"])
def test_control_characters_in_any_query_string_get_400(client, url):
    response = client.get(url + "?next=%00&x=1")
    assert response.status_code == 400
    assert b"control characters" in response.content
    assert client.get(url + "?q=tab%09and%0Anewline").status_code != 400  # ordinary whitespace passes
