"""gunicorn's configuration for Fanfold's web processes: `gunicorn -c gunicorn.conf.py`.

Every value can be set from the environment; the defaults suit one machine behind a reverse
proxy that terminates TLS. Web processes serve the API, the admin and the static files
(WhiteNoise); workflows run in Celery workers, never here.
"""

from __future__ import annotations

import multiprocessing
import os

wsgi_app = "config.wsgi:application"
bind = os.environ.get("GUNICORN_BIND", "127.0.0.1:8000")
# Threaded workers: a server-sent-events stream holds a thread (for one FANFOLD_SSE_WINDOW_SECONDS
# window at most), not a whole process, so open streams leave the other threads to normal
# requests. Each thread may hold a database connection: workers x threads of them at most.
worker_class = "gthread"
workers = int(os.environ.get("GUNICORN_WORKERS") or multiprocessing.cpu_count() * 2 + 1)
threads = int(os.environ.get("GUNICORN_THREADS") or 8)
# A worker takes no more connections than it has threads: one whose threads are all busy
# (streams) leaves new connections to the others instead of queueing them behind its streams.
worker_connections = threads
# So no connection is kept alive between requests (it would take a thread's place): the proxy
# in front keeps clients' connections alive, and reconnecting to it on this machine is cheap.
keepalive = 0
# The stream window (15 s by default) stays well below this.
timeout = int(os.environ.get("GUNICORN_TIMEOUT") or 30)
graceful_timeout = int(os.environ.get("GUNICORN_GRACEFUL_TIMEOUT") or 30)
# Addresses whose X-Forwarded-* headers gunicorn believes: the proxy's, never "*" unless
# nothing but the proxy can reach this port.
forwarded_allow_ips = os.environ.get("GUNICORN_FORWARDED_ALLOW_IPS", "127.0.0.1,::1")
accesslog = os.environ.get("GUNICORN_ACCESS_LOG", "-")
# A callback's token is its credential: the access log masks it in `/callbacks/<token>/`
# paths (and never prints Authorization headers), whatever access_log_format says.
logger_class = "api.gunicorn_logging.TokenMaskingLogger"
errorlog = "-"
loglevel = os.environ.get("GUNICORN_LOG_LEVEL", "info")
