"""gunicorn's settings for the site: `gunicorn -c python:leaderboard.serving.gunicorn_config`.

One process per core with THREADS_PER_WORKER threads each (WEB_WORKERS, WEB_THREADS), threaded workers that
share new connections out by free threads (leaderboard/serving/gunicorn_worker.py), bound to WEB_BIND
(default 127.0.0.1:8000). Each process gets a database pool as large as its threads (LEADERBOARD_DB_POOL),
so the site never holds more than workers x threads connections. Behind a reverse proxy, FORWARDED_ALLOW_IPS
names the proxy's addresses whose X-Forwarded-* headers are believed.
"""

import os

from leaderboard.serving.sizing import web_size

workers, threads = web_size()
# gthread, taking new connections where a thread is free (WEB_WORKER_CLASS=gthread: gunicorn's own)
worker_class = (
    os.environ.get("WEB_WORKER_CLASS") or "leaderboard.serving.gunicorn_worker.BalancedThreadWorker"
)
bind = [address for address in os.environ.get("WEB_BIND", "127.0.0.1:8000").split(",") if address]
wsgi_app = "leaderboard.wsgi:application"

# A request that takes longer than this is stuck: its process is replaced (a cold CSV build takes < 1 s).
timeout = 60
graceful_timeout = 20
keepalive = 5
# Request lines and headers stay small; bodies are bounded by leaderboard.serving.limits.
limit_request_line = 8190
limit_request_fields = 100
limit_request_field_size = 8190
# A process is replaced after this many requests, so that no slow growth of memory lasts.
max_requests = 50_000
max_requests_jitter = 5_000

forwarded_allow_ips = os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1,::1")
accesslog = os.environ.get("WEB_ACCESS_LOG") or None
errorlog = "-"
loglevel = os.environ.get("LOG_LEVEL", "info").lower()
control_socket_disable = True  # no runtime control socket (gunicorn would put one in $HOME)
if os.path.isdir("/dev/shm"):
    worker_tmp_dir = "/dev/shm"  # the workers' heartbeat files, off the disk

os.environ.setdefault("LEADERBOARD_DB_POOL", str(threads))
