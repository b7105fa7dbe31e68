# The rageval dashboard, for hosting behind a reverse proxy or on any container platform.
#
#   docker build -t rageval .
#   docker run --init -p 8501:8501 -v "$PWD/results:/results:ro" \
#     -e RAGEVAL_PASSWORD_HASH="$(rageval hash-password)" rageval
#
# Results come from /results (mount it read-only) or from a bucket:
#   -e RAGEVAL_RESULTS=s3://bucket/prefix -e AWS_ACCESS_KEY_ID=… -e AWS_SECRET_ACCESS_KEY=…
# Sign-in: RAGEVAL_PASSWORD_HASH, or mount secrets.toml (OIDC [auth] + [rageval] allow-list)
# at /app/.streamlit/secrets.toml. See docs/deploy.md.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /app

# Dependencies first, so editing the code does not re-download them.
COPY pyproject.toml README.md ./
COPY rageval_core ./rageval_core
COPY dashboard ./dashboard
RUN pip install ".[s3,auth]"

COPY .streamlit/config.toml ./.streamlit/config.toml

# An unprivileged user that owns nothing in /app: a compromised app cannot rewrite itself.
RUN useradd --system --uid 10001 --create-home --home-dir /home/rageval rageval

ENV RAGEVAL_RESULTS=/results \
    XDG_CACHE_HOME=/tmp/rageval-cache \
    STREAMLIT_SERVER_FILE_WATCHER_TYPE=none \
    STREAMLIT_CLIENT_SHOW_ERROR_DETAILS=type

USER 10001:10001
EXPOSE 8501

# Follows STREAMLIT_SERVER_BASE_URL_PATH, so the check still works behind a path prefix.
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD python -c "import os, urllib.request; p = os.environ.get('STREAMLIT_SERVER_BASE_URL_PATH', '').strip('/'); urllib.request.urlopen('http://127.0.0.1:8501/' + (p + '/' if p else '') + '_stcore/health', timeout=4)"

CMD ["rageval", "dashboard", "--host", "0.0.0.0", "--port", "8501"]
