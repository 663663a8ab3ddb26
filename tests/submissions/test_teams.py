"""Teams: members submit under a team (form, API, a team's token, CLI), a team owns its new methods and
its tokens, quotas are the team's when submitting under it, and the admin manages them."""

import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command

from leaderboard.models import ApiToken, MethodOwnership, Submission, Team, TeamMembership
from leaderboard.submissions.quotas import QuotaExceeded, check_quota
from leaderboard.submissions.tokens import authenticate_token, issue_token
from tests.submissions.samples import TORCH_RELU_KERNEL, kernel_name, zip_bytes
from tests.submissions.test_gpu_time_quota import held
from tests.submissions.test_tokens_quotas import make_submissions

pytestmark = pytest.mark.django_db


@pytest.fixture
def team(user):
    made = Team.objects.create(name="Kernel Lab")
    TeamMembership.objects.create(team=made, user=user, role=TeamMembership.Role.OWNER)
    return made


@pytest.fixture
def bob(django_user_model):
    return django_user_model.objects.create_user("bob", password="a-long-password-2")


def bundle(problem=1):
    return SimpleUploadedFile("run.zip", zip_bytes({kernel_name(1, problem): TORCH_RELU_KERNEL}))


def api_post(client, token, problem=1, **fields):
    data = {"bundle": bundle(problem), "method": "TeamLLM", "hardware": "CPU", **fields}
    return client.post("/api/submissions", data, HTTP_AUTHORIZATION=f"Bearer {token}")


def test_a_member_submits_under_the_team_which_owns_the_new_method(client, user, team, tasks_l1, redis_conn):
    response = api_post(client, issue_token(user)[1], team="kernel-lab")
    assert response.status_code == 201, response.content
    assert response.json()["submissions"][0]["team"] == "kernel-lab"
    submission = Submission.objects.get()
    assert submission.team == team
    assert MethodOwnership.objects.get(method=submission.entry.method).team == team
    assert client.get(response.json()["status_url"]).json()["team"] == "kernel-lab"


def test_a_non_member_cannot_submit_under_a_team_nor_for_its_method(
    client, user, team, bob, tasks_l1, redis_conn
):
    assert api_post(client, issue_token(user)[1], team="Kernel Lab").status_code == 201  # name or slug
    bob_token = issue_token(bob)[1]
    refused = api_post(client, bob_token, problem=2, team="kernel-lab")
    assert refused.status_code == 400
    assert "not a member of the team 'Kernel Lab'" in refused.json()["error"]
    refused = api_post(client, bob_token, problem=2)  # the team's method, personally
    assert refused.status_code == 400
    assert "belongs to the team 'Kernel Lab'" in refused.json()["error"]
    assert api_post(client, bob_token, problem=2, team="nope").status_code == 400
    assert Submission.objects.count() == 1


def test_a_member_submitting_for_the_team_s_method_submits_under_the_team(
    client, user, team, bob, tasks_l1, redis_conn
):
    assert api_post(client, issue_token(user)[1], team="kernel-lab").status_code == 201
    TeamMembership.objects.create(team=team, user=bob)
    assert api_post(client, issue_token(bob)[1], problem=2).status_code == 201
    assert Submission.objects.get(user=bob).team == team


def test_a_team_token_submits_under_its_team_only(client, user, team, tasks_l1, redis_conn):
    token, clear = issue_token(user, name="ci", team=team)
    assert api_post(client, clear).status_code == 201
    assert Submission.objects.get().team == team
    other = Team.objects.create(name="Other Lab")
    TeamMembership.objects.create(team=other, user=user)
    refused = api_post(client, clear, problem=2, team="other-lab")
    assert refused.status_code == 400
    assert "this token is the team 'Kernel Lab'" in refused.json()["error"]
    TeamMembership.objects.filter(team=team, user=user).delete()  # left the team: its token stops working
    assert authenticate_token(clear) is None
    assert api_post(client, clear, problem=3).status_code == 401


def test_only_members_get_a_team_token(user, team, bob):
    with pytest.raises(ValueError, match="not a member"):
        issue_token(bob, team=team)
    with pytest.raises(CommandError, match="not a member"):
        call_command("issue_token", "bob", "--team", "kernel-lab")
    call_command("issue_token", "alice", "--team", "kernel-lab")
    assert user.api_tokens.get().team == team


def test_quotas_are_the_team_s_when_submitting_under_it(
    client, settings, user, team, bob, tasks_l1, redis_conn
):
    settings.SUBMISSION_TEAM_QUOTAS = {"active": 1}
    TeamMembership.objects.create(team=team, user=bob)
    assert api_post(client, issue_token(user)[1], team="kernel-lab").status_code == 201
    bob_token = issue_token(bob)[1]
    over = api_post(client, bob_token, problem=2, team="kernel-lab")
    assert over.status_code == 429
    assert over.json()["error"].startswith("the team Kernel Lab: at most 1 submissions")
    assert over["Retry-After"] == "300"
    personal = api_post(client, bob_token, problem=2, method="BobLLM")  # bob's own quota is untouched
    assert personal.status_code == 201, personal.content


def test_the_upload_form_offers_teams_and_the_cli_takes_one(client, user, team, cpu, tasks_l1, redis_conn,
                                                            tmp_path):  # fmt: skip
    client.force_login(user)
    assert b"myself" in client.get("/submit/").content
    data = {"bundle": bundle(), "new_method": "FormTeamLLM", "method_kind": "llm", "hardware": cpu.pk,
            "suite": "builtin", "team": "kernel-lab"}  # fmt: skip
    assert client.post("/submit/", data).status_code == 302
    assert Submission.objects.get().team == team
    path = tmp_path / "run.zip"
    path.write_bytes(zip_bytes({kernel_name(1, 2): TORCH_RELU_KERNEL}))
    call_command("submit", str(path), "--method", "CliTeamLLM", "--user", "alice", "--team", "kernel-lab")
    assert Submission.objects.get(entry__method__name="CliTeamLLM").team == team


def test_the_admin_manages_teams_members_and_owned_methods(client, django_user_model, user, team):
    admin = django_user_model.objects.create_superuser("root", password="a-long-password-3")
    client.force_login(admin)
    page = client.get(f"/admin/leaderboard/team/{team.pk}/change/")
    assert page.status_code == 200
    assert b"owned method" in page.content.lower()
    assert client.get("/admin/leaderboard/team/?q=alice").content.count(b"Kernel Lab") >= 1


def test_a_team_s_gpu_time_is_its_members_runs_under_it(settings, user, team, bob):
    settings.SUBMISSION_TEAM_QUOTAS = {"per_day": 9, "per_minute": 9, "active": 9, "gpu_hours_per_day": 1}
    TeamMembership.objects.create(team=team, user=bob)
    make_submissions(user, 1)
    Submission.objects.filter(user=user).update(team=team)
    held(Submission.objects.get(user=user), minutes=60)
    with pytest.raises(QuotaExceeded, match=r"^the team Kernel Lab: GPU-time quota reached"):
        check_quota(bob, team=team)
    check_quota(bob)  # bob's own GPU time is untouched


def test_the_upload_form_lists_only_the_visitor_s_own_teams(client, user, team, bob):
    Team.objects.create(name="Someone Else's Lab")
    client.force_login(user)
    page = client.get("/submit/").content.decode()
    assert "Kernel Lab" in page
    assert "Someone Else" not in page
    client.force_login(bob)  # in no team: the choice is not offered at all
    page = client.get("/submit/").content.decode()
    assert "Kernel Lab" not in page
    assert "Someone Else" not in page


def test_a_member_creates_a_team_token_on_the_account_page(client, user, team, bob):
    client.force_login(user)
    page = client.post("/submissions/tokens/", {"name": "lab ci", "team": "kernel-lab"}).content.decode()
    clear = re.search(r"kbl_[\w-]+", page).group(0)
    assert authenticate_token(clear).team == team
    assert "Kernel Lab" in client.get("/submissions/").content.decode()  # the token list names the team
    client.force_login(bob)  # not a member: refused, nothing created
    assert client.post("/submissions/tokens/", {"team": "kernel-lab"}).status_code == 302
    assert not ApiToken.objects.filter(user=bob).exists()
