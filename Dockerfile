# codescout in a container: an MCP server on stdio by default, and the CLI beside it.
#
#   docker build -t codescout .
#   docker run -i --rm codescout                                     # MCP over stdio
#   docker run --rm -v "$PWD:/w" codescout rank --input /w/args.json # rank a mounted file
#   docker run -i --rm -v "$PWD:/w:ro" codescout mcp --workspace /w   # MCP, with rank_workspace_hits
#
# As a shared HTTP service (streamable HTTP at /mcp; see docs/http.md):
#   docker run --rm -p 8000:8000 -e CODESCOUT_AUTH_TOKEN=change-me codescout \
#     mcp --transport streamable-http --host 0.0.0.0 --allow-host localhost:8000
#
# Another Debian-based Python image works as the base: --build-arg PYTHON_IMAGE=python:3.13-slim-bookworm

ARG PYTHON_IMAGE=python:3.12.8-slim-bookworm

# Stage 1: build the wheel and install it, with its dependencies, into a virtual environment
# made without pip: the build's own pip installs into it, so the runtime carries no pip,
# setuptools or wheel. The build stops if the wheel is not the version the label will name. The
# ripgrep wheel's rg (search_workspace's) carries its debug information, 26 MB: it is taken out
# here, stripped in the next stage (under 5 MB) and put back in the runtime.
FROM ${PYTHON_IMAGE} AS build
ARG CODESCOUT_VERSION=0.1.0
WORKDIR /src
COPY pyproject.toml README.md LICENSE ./
COPY codescout_mcp ./codescout_mcp
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /dist . \
 && test -e "/dist/codescout_mcp-${CODESCOUT_VERSION}-py3-none-any.whl" \
 && python -m venv --without-pip /opt/codescout \
 && pip --python /opt/codescout/bin/python install --no-cache-dir "/dist/codescout_mcp-${CODESCOUT_VERSION}-py3-none-any.whl" \
 && mv /opt/codescout/bin/rg /rg

# Stage 2: Debian's git and tini, of which the runtime takes the two binaries only. Debian's
# git package pulls in perl, curl's libraries and git's helper programs (about 120 MB); the
# runtime runs git rev-parse, status, log, ls-files and config, all built into the one `git`
# binary, whose libraries (libc, zlib, pcre2) every Debian image already has. tini is PID 1:
# the kernel drops a SIGTERM sent to a PID 1 that has no handler yet, and tini has one from
# its first instant, while Python installs its own only after the interpreter has started.
FROM ${PYTHON_IMAGE} AS tools
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends git tini binutils \
 && rm -rf /var/lib/apt/lists/* \
 && mkdir /out \
 && cp /usr/bin/git /usr/bin/tini /out/
COPY --from=build /rg /out/rg
RUN strip /out/rg

# Stage 3: the runtime. Only the environment and the two binaries are copied over: no build
# tools, no sources, no package lists.
FROM ${PYTHON_IMAGE}
ARG CODESCOUT_VERSION=0.1.0
LABEL io.modelcontextprotocol.server.name="io.github.codescout-dev/codescout" \
      org.opencontainers.image.title="codescout" \
      org.opencontainers.image.description="Ranks code-search hits by match count and recency (MCP server and CLI)" \
      org.opencontainers.image.licenses="MIT" \
      org.opencontainers.image.version="${CODESCOUT_VERSION}" \
      org.opencontainers.image.source="https://github.com/codescout-dev/codescout"
COPY --from=tools /out/git /out/tini /usr/local/bin/
# rank_workspace_hits reads a mounted checkout's history with git. The checkout belongs to the
# host's user, so git is told /w is safe to read; that trust is safe only while codescout's git
# runs nothing a repository configures. Running both binaries fails the build if a library is missing.
RUN git config --system --add safe.directory /w \
 && git --version \
 && tini --version
COPY --from=build /opt/codescout /opt/codescout
COPY --from=tools /out/rg /opt/codescout/bin/rg
# search_workspace runs the ripgrep the package's wheel installed beside codescout.
RUN /opt/codescout/bin/rg --version \
 && groupadd --system --gid 10001 codescout \
 && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin codescout
ENV PATH="/opt/codescout/bin:${PATH}" \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
# Numeric, so the host and Kubernetes can tell it is not root.
USER 10001:10001
WORKDIR /w
EXPOSE 8000
# tini forwards signals to codescout; a codescout that a SIGTERM ends before its own handler is
# up (killed by the signal: status 143) has stopped as asked, so tini reports that as 0. Under
# another init (`docker run --init`), -s makes it the subreaper instead, without a warning.
ENTRYPOINT ["/usr/local/bin/tini", "-s", "-e", "143", "--", "codescout"]
CMD ["mcp"]
