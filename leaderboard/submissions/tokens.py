"""API tokens: issued once in clear, stored as SHA-256, revocable, checked on every API request."""

import hashlib
import secrets

from django.utils import timezone

from leaderboard.models import ApiToken

TOKEN_PREFIX = "kbl_"
PREFIX_LENGTH = 12


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def issue_token(user, name: str = "", team=None) -> tuple[ApiToken, str]:
    """Create a token for user (a team's token when team is given: the user must be one of its members);
    return the stored row and the clear token (shown once, never stored)."""
    if team is not None and not team.has_member(user):
        raise ValueError(f"{user} is not a member of the team {team}")
    clear = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(
        user=user, team=team, name=name, prefix=clear[:PREFIX_LENGTH], token_hash=hash_token(clear)
    )
    return token, clear


def authenticate_token(clear: str) -> ApiToken | None:
    """The active token of this text, its user active (and, for a team's token, still a member), or None;
    records when the token was last used."""
    if not clear or not clear.startswith(TOKEN_PREFIX):
        return None
    token = (
        ApiToken.objects.select_related("user", "team")
        .filter(token_hash=hash_token(clear), revoked_at__isnull=True)
        .first()
    )
    if token is None or not token.user.is_active:
        return None
    if token.team is not None and not token.team.has_member(token.user):
        return None
    ApiToken.objects.filter(pk=token.pk).update(last_used=timezone.now())
    return token


def authenticate(clear: str):
    """The active user owning this token, or None; records when the token was last used."""
    token = authenticate_token(clear)
    return token.user if token else None


def bearer_token(request) -> str:
    """The token of an 'Authorization: Bearer …' (or 'Token …') header, or ''."""
    scheme, _, value = request.headers.get("Authorization", "").partition(" ")
    return value.strip() if scheme.lower() in {"bearer", "token"} else ""


def revoke(tokens) -> int:
    """Revoke the given ApiToken queryset's active tokens; return how many."""
    return tokens.filter(revoked_at__isnull=True).update(revoked_at=timezone.now())
