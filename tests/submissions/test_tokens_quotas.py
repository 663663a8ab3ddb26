"""API tokens (hashed at rest, shown once, revocable) and per-user quotas."""

import hashlib

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from leaderboard.models import ApiToken, Submission
from leaderboard.submissions.quotas import QuotaExceeded, check_quota
from leaderboard.submissions.tokens import authenticate, issue_token

pytestmark = pytest.mark.django_db


def test_tokens_are_stored_only_as_sha256(user):
    token, clear = issue_token(user, "laptop")
    assert clear.startswith("kbl_")
    assert len(clear) > 40
    assert token.token_hash == hashlib.sha256(clear.encode()).hexdigest()
    assert clear not in str(list(ApiToken.objects.values()))
    assert authenticate(clear) == user
    assert authenticate(clear + "x") is None
    assert ApiToken.objects.get().last_used is not None


def test_issue_token_creates_the_user_and_prints_the_token_once(capsys):
    call_command("issue_token", "bob", "--name", "ci")
    clear = capsys.readouterr().out.strip()
    user = authenticate(clear)
    assert user.username == "bob"
    assert not user.has_usable_password()


def test_revoke_token_by_prefix_and_by_user(user, capsys):
    token, clear = issue_token(user)
    call_command("revoke_token", token.prefix)
    assert authenticate(clear) is None
    _, other = issue_token(user)
    call_command("revoke_token", "--user", "alice")
    assert authenticate(other) is None
    with pytest.raises(CommandError):
        call_command("revoke_token", "kbl_nothing")


def test_revoke_token_takes_the_whole_token_or_a_longer_prefix(user, django_user_model):
    token, clear = issue_token(user)
    _, kept = issue_token(django_user_model.objects.create_user("bob"))
    call_command("revoke_token", clear)
    assert authenticate(clear) is None
    assert authenticate(kept) is not None  # only the named token
    _, longer = issue_token(user)
    call_command("revoke_token", longer[:20])
    assert authenticate(longer) is None


def test_revoke_token_refuses_a_prefix_too_short_to_tell_tokens_apart(user):
    token, clear = issue_token(user)
    with pytest.raises(CommandError, match="give at least the token's first 12 characters"):
        call_command("revoke_token", clear[:8])
    assert authenticate(clear) == user


def test_inactive_users_cannot_use_their_tokens(user):
    _, clear = issue_token(user)
    user.is_active = False
    user.save()
    assert authenticate(clear) is None


def make_submissions(user, count, status="completed", counts=True):
    from leaderboard.models import Entry, Hardware, Level, Method

    method = Method.objects.create(
        name=f"M{Submission.objects.count()}", slug=f"m{Submission.objects.count()}"
    )
    entry = Entry.objects.create(method=method, level=Level.objects.get(number=1))
    hardware = Hardware.objects.get(name="CPU")
    for _ in range(count):
        Submission.objects.create(
            user=user, entry=entry, hardware=hardware, status=status, counts_against_quota=counts,
            bundle_format="runs_archive", bundle_sha256="0" * 64,
        )  # fmt: skip


def test_daily_quota(user, settings):
    settings.SUBMISSION_QUOTAS = {"per_day": 3, "per_minute": 100}
    make_submissions(user, 3)
    with pytest.raises(QuotaExceeded, match="daily quota") as raised:
        check_quota(user)
    assert raised.value.retry_after == 3600


def test_infrastructure_failures_never_count(user, settings):
    settings.SUBMISSION_QUOTAS = {"per_day": 3, "per_minute": 100}
    make_submissions(user, 5, status="errored", counts=False)
    check_quota(user)


def test_active_limit_and_rate_limit(user, settings):
    settings.SUBMISSION_QUOTAS = {"active": 2, "per_minute": 100}
    make_submissions(user, 2, status="running")
    with pytest.raises(QuotaExceeded, match="queued or running"):
        check_quota(user)
    settings.SUBMISSION_QUOTAS = {"active": 10, "per_minute": 2}
    with pytest.raises(QuotaExceeded, match="rate limit") as raised:
        check_quota(user)
    assert raised.value.retry_after == 60


def test_staff_are_exempt(user, settings):
    settings.SUBMISSION_QUOTAS = {"per_day": 0, "active": 0, "per_minute": 0}
    user.is_staff = True
    check_quota(user)
