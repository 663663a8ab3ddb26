"""Settings, read from environment variables with embedded-default fallbacks (SQLite, local Redis)."""

import os
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("LEADERBOARD_VAR_DIR", BASE_DIR / "var"))


def env_flag(name: str, default: bool) -> bool:
    """Read a boolean environment variable ('1', 'true', 'yes', 'on' are true)."""
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


# --- core -----------------------------------------------------------------------------------------
DEBUG = env_flag("DEBUG", True)
SECRET_KEY = os.environ.get("SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG is off.")
    SECRET_KEY = "dev-only-insecure-key-never-use-in-production"  # noqa: S105

ALLOWED_HOSTS = [h for h in os.environ.get("ALLOWED_HOSTS", "127.0.0.1,localhost,[::1]").split(",") if h]
CSRF_TRUSTED_ORIGINS = [o for o in os.environ.get("CSRF_TRUSTED_ORIGINS", "").split(",") if o]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "simple_history",
    "django_rq",
    "leaderboard",
    "tasks",
]

MIDDLEWARE = [
    # First: a body over its path's limit is refused before anything reads it (leaderboard/serving/).
    "leaderboard.serving.limits.RequestBodyLimitMiddleware",
    "leaderboard.serving.limits.QueryStringMiddleware",
    # GETs of the read API counted per client address (429 past API_READ_RATE_LIMIT), cached answers too.
    "leaderboard.serving.ratelimit.ReadApiRateLimitMiddleware",
    "django.middleware.security.SecurityMiddleware",
    # Static files served by the application itself, DEBUG or not (compressed, cached).
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # Anonymous answers of the public read pages, kept per process under the data version.
    "leaderboard.serving.page_cache.PageCacheMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "leaderboard.security.headers.SecurityHeadersMiddleware",
    "simple_history.middleware.HistoryRequestMiddleware",
]

ROOT_URLCONF = "leaderboard.urls"
WSGI_APPLICATION = "leaderboard.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- database: DATABASE_URL, default a SQLite file in the project folder ----------------------------
# Connections are bounded per process: none kept between requests by default (CONN_MAX_AGE=0), and in the
# web server's processes, on PostgreSQL, a psycopg pool of LEADERBOARD_DB_POOL connections (gunicorn's
# config sets it to the threads of a worker), so the site holds at most workers x threads connections.
DEFAULT_SQLITE = f"sqlite:///{VAR_DIR / 'leaderboard.sqlite3'}"
DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL", DEFAULT_SQLITE), conn_max_age=int(os.environ.get("CONN_MAX_AGE", 0))
    )
}
DB_POOL_SIZE = int(os.environ.get("LEADERBOARD_DB_POOL") or 0)
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql" and DB_POOL_SIZE > 0:
    DATABASES["default"]["CONN_MAX_AGE"] = 0  # the pool keeps the connections
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
        "min_size": 1,
        "max_size": DB_POOL_SIZE,
        "max_idle": 60,  # seconds before an idle connection beyond min_size is closed
        "timeout": 20,  # seconds a request waits for a free connection before it fails
    }
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Several processes (web, worker) share the file: wait for locks instead of failing at once.
    DATABASES["default"]["OPTIONS"] = {"timeout": 30, "transaction_mode": "IMMEDIATE"}
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    # A file, not memory, so that worker processes started by the tests see the test database.
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / "test.sqlite3")}
    VAR_DIR.mkdir(parents=True, exist_ok=True)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- queue: REDIS_URL holds only jobs; the database is the source of truth -----------------------------
REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
GPU_QUEUES = [
    q for q in os.environ.get("LEADERBOARD_GPU_QUEUES", "gpu-h100,gpu-h200,gpu-l40s,gpu-a100").split(",") if q
]
QUEUE_NAMES = ["default", "compile", "cpu", *GPU_QUEUES]
RQ_QUEUES = {name: {"URL": REDIS_URL, "DEFAULT_TIMEOUT": 3 * 3600} for name in QUEUE_NAMES}
RQ = {"COMMIT_MODE": "on_db_commit"}
RQ_SHOW_ADMIN_LINK = True

# --- auth, i18n, static ------------------------------------------------------------------------------
# Logins are refused for a while after 10 failures for one user name or address (login_throttle.py).
AUTHENTICATION_BACKENDS = ["leaderboard.security.login_throttle.ThrottledModelBackend"]
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/"
LEADERBOARD_SIGNUP = env_flag("LEADERBOARD_SIGNUP", True)
"""Whether visitors may create accounts at /accounts/signup/ (LEADERBOARD_SIGNUP=0 turns it off)."""

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "/static/"
# `manage.py collectstatic` (bin/serve runs it) gathers the files here, compressed; WhiteNoise serves them.
STATIC_ROOT = VAR_DIR / "static"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
# Under DEBUG, files are found where they live (no collectstatic needed); otherwise read from STATIC_ROOT.
WHITENOISE_USE_FINDERS = DEBUG
WHITENOISE_AUTOREFRESH = DEBUG
STATICFILES_DIRS = [
    BASE_DIR / "static",
    # Chart.js, installed from the npm registry by `npm ci` (pinned in package-lock.json).
    ("vendor/chart.js", BASE_DIR / "node_modules" / "chart.js" / "dist"),
]

MEDIA_ROOT = VAR_DIR / "media"
# Form fields other than files (a bundle is a file): Django's default, 2.5 MB.
# Finished answers of the public read pages kept per web process for anonymous visitors
# (leaderboard/serving/page_cache.py): on/off, bytes kept, and how long one may be replayed at most.
PAGE_CACHE_ENABLED = env_flag("LEADERBOARD_PAGE_CACHE", True)
PAGE_CACHE_BYTES = int(os.environ.get("LEADERBOARD_PAGE_CACHE_MB") or 32) * 1024 * 1024
PAGE_CACHE_SECONDS = 300.0

DATA_UPLOAD_MAX_MEMORY_SIZE = 2_621_440
FILE_UPLOAD_MAX_MEMORY_SIZE = 8 * 1024 * 1024
# An oversized bundle is refused unread (declared length) or cut off at the limit, never spooled whole.
FILE_UPLOAD_HANDLERS = [
    "leaderboard.submissions.uploads.BoundedUploadHandler",
    "django.core.files.uploadhandler.MemoryFileUploadHandler",
    "django.core.files.uploadhandler.TemporaryFileUploadHandler",
]

# --- security headers (production: DEBUG off) ----------------------------------------------------------
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"
# Content-Security-Policy and Permissions-Policy: leaderboard/security/headers.py.
if not DEBUG:
    SECURE_SSL_REDIRECT = env_flag("SECURE_SSL_REDIRECT", True)
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_HSTS_SECONDS = int(os.environ.get("SECURE_HSTS_SECONDS", 31536000))
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True

# --- the evaluator ------------------------------------------------------------------------------------
EVALUATOR = {
    # Device the local worker evaluates on: "cpu" (Triton interpreter, CPU timing) or "cuda".
    "DEVICE": os.environ.get("EVALUATOR_DEVICE", "cpu"),
    "MODE": os.environ.get("EVALUATOR_MODE", "hardened"),
    "WORK_DIR": Path(os.environ.get("EVALUATOR_WORK_DIR", VAR_DIR / "evaluator")),
    "PYTHON": os.environ.get("EVALUATOR_PYTHON", ""),
    # Baselines to time (eager, compile); empty: both. A CPU worker may skip the slow torch.compile one.
    "BASELINES": [name for name in os.environ.get("EVALUATOR_BASELINES", "").split(",") if name],
    # Hardened timing cut to the timed calls that fill this many ms per variant (empty: all 100 on a GPU).
    "TIMING_BUDGET_MS": float(os.environ["EVALUATOR_TIMING_BUDGET_MS"])
    if os.environ.get("EVALUATOR_TIMING_BUDGET_MS")
    else None,
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    "loggers": {"django.db.backends": {"level": "WARNING"}},
}

# --- read-API rate limit (leaderboard/serving/ratelimit.py) -------------------------------------------
# GETs of /api/* per client address and window; past it, 429 with Retry-After. 0 turns the limit off.
API_READ_RATE_LIMIT = int(os.environ.get("API_READ_RATE_LIMIT", 120))
API_READ_RATE_WINDOW_S = int(os.environ.get("API_READ_RATE_WINDOW_S", 60))
API_READ_RATE_CACHE = os.environ.get("API_READ_RATE_CACHE", "default")
# Proxies whose X-Forwarded-For names the client; their own requests without it are not limited.
API_READ_RATE_PROXIES = frozenset(
    a.strip() for a in os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1,::1").split(",") if a.strip()
)
