"""GET /healthz: whether the database and the queue answer (for a load balancer or a supervisor)."""

from django.db import connection
from django.db.utils import DatabaseError
from django.http import JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from leaderboard.embedded import redis_reachable


def database_answers() -> bool:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            return cursor.fetchone() == (1,)
    except DatabaseError:
        return False


@never_cache
@require_GET
def healthz(request):
    """200 while the database answers (a queue that is down only delays evaluations), else 503."""
    from django.conf import settings

    database = database_answers()
    queue = redis_reachable(settings.REDIS_URL)
    body = {"database": "ok" if database else "unavailable", "queue": "ok" if queue else "unavailable"}
    return JsonResponse(body, status=200 if database else 503)
