# codescout in a container: an MCP server on stdio by default, and the CLI beside it.
#
#   docker build -t codescout .
#   docker run -i --rm codescout                                     # MCP over stdio
#   docker run --rm -v "$PWD:/w" codescout rank --input /w/args.json # rank a mounted file
#   docker run -i --rm -v "$PWD:/w:ro" codescout mcp --workspace /w   # MCP, with rank_workspace_hits
#
# As a shared HTTP service (streamable HTTP at /mcp; see the README's "Remote use"):
#   docker run --rm -p 8000:8000 -e CODESCOUT_AUTH_TOKEN=change-me codescout \
#     mcp --transport streamable-http --host 0.0.0.0 --allow-host localhost:8000

ARG PYTHON_IMAGE=python:3.12.8-slim-bookworm

# Stage 1: build the wheel and install it, with its dependencies, into a virtual environment.
FROM ${PYTHON_IMAGE} AS build
WORKDIR /src
COPY pyproject.toml README.md LICENSE ./
COPY codescout_mcp ./codescout_mcp
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /dist . \
 && python -m venv /opt/codescout \
 && /opt/codescout/bin/pip install --no-cache-dir /dist/codescout_mcp-*.whl

# Stage 2: the runtime. Only the environment is copied over: no build tools, no sources.
FROM ${PYTHON_IMAGE}
LABEL io.modelcontextprotocol.server.name="io.github.codescout-dev/codescout" \
      org.opencontainers.image.title="codescout" \
      org.opencontainers.image.description="Ranks code-search hits by match count and recency (MCP server and CLI)" \
      org.opencontainers.image.licenses="MIT"
# git, and nothing else: rank_workspace_hits reads a mounted checkout's history with it.
# The checkout belongs to the host's user, so git is told /w is safe to read.
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends git \
 && rm -rf /var/lib/apt/lists/* \
 && git config --system --add safe.directory /w
COPY --from=build /opt/codescout /opt/codescout
RUN groupadd --system --gid 10001 codescout \
 && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin codescout
ENV PATH="/opt/codescout/bin:${PATH}" \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
# Numeric, so the host and Kubernetes can tell it is not root.
USER 10001:10001
WORKDIR /w
EXPOSE 8000
ENTRYPOINT ["codescout"]
CMD ["mcp"]
