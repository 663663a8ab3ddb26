"""Accounts: sign-up (the operator may turn it off with LEADERBOARD_SIGNUP=0) and the account page, which
holds the user's submissions with their states, and their API tokens."""

from django.conf import settings
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import UserCreationForm
from django.http import Http404
from django.shortcuts import redirect, render

from leaderboard.submissions.views import render_mine


def signup_open() -> bool:
    return bool(getattr(settings, "LEADERBOARD_SIGNUP", True))


def signup(request):
    """Create an account and log in with it; 404 when sign-up is switched off."""
    if not signup_open():
        raise Http404("Sign-up is closed on this site; ask its operator for an account.")
    if request.user.is_authenticated:
        return redirect("account")
    form = UserCreationForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        user = form.save()
        login(request, user, backend=settings.AUTHENTICATION_BACKENDS[0])
        return redirect(request.POST.get("next") or "account")
    status = 400 if request.method == "POST" else 200
    return render(request, "registration/signup.html", {"form": form}, status=status)


@login_required
def account(request):
    """The account page: the user, password change and log-out, my submissions and my API tokens."""
    return render_mine(request, account_page=True)
