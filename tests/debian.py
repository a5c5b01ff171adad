"""Debian packages the suite needs (libfuse, chromium, proxies), installed with apt-get when missing.

Test workers and `scripts/docker-ready` may run apt at the same moment: every install waits
for dpkg's lock instead of failing on it, and a failed install refreshes the package lists
once and tries again (a new machine has none).
"""

from __future__ import annotations

import os
import subprocess

LOCK_TIMEOUT = "600"  # seconds apt waits for another apt to finish


def apt_install(*packages: str, timeout: float = 1200) -> None:
    """Install `packages` (as root); RuntimeError with apt's words if that fails."""
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    lock = ("-o", f"DPkg::Lock::Timeout={LOCK_TIMEOUT}")
    install = ["apt-get", *lock, "install", "-y", "-q", "--no-install-recommends", *packages]
    done = subprocess.run(install, env=env, capture_output=True, check=False, timeout=timeout)
    if done.returncode != 0:  # the package lists may be missing or stale
        subprocess.run(["apt-get", *lock, "update", "-q"], env=env, capture_output=True, check=False, timeout=timeout)
        done = subprocess.run(install, env=env, capture_output=True, check=False, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"apt-get install {' '.join(packages)} failed: {done.stderr.decode(errors='replace')}")
