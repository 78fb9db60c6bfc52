"""A terminal editor in a private tmux server: send keys, read the screen."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import time

import pytest


class Tmux:
    def __init__(self, name: str, command: list[str], cwd, env: dict[str, str], width: int = 120, height: int = 30):
        tmux = shutil.which("tmux")
        if not tmux:
            pytest.skip("tmux not installed (apt-get install tmux, or `bash editors/install.sh`)")
        self.tmux = tmux
        self.socket = f"diffill-e2e-{name}-{os.getpid()}"
        env_args = [f"{k}={v}" for k, v in env.items()]
        line = "env " + " ".join(shlex.quote(a) for a in [*env_args, *command])
        self._run("new-session", "-d", "-s", "e2e", "-x", str(width), "-y", str(height), "-c", str(cwd), line)

    def _run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run(
            [self.tmux, "-L", self.socket, "-f", "/dev/null", *args],
            capture_output=True,
            text=True,
            check=check,
            timeout=30,
        )

    def keys(self, *keys: str, literal: bool = False, pause: float = 0.15) -> None:
        args = ["send-keys", "-t", "e2e", *(["-l"] if literal else []), *keys]
        self._run(*args)
        time.sleep(pause)

    def screen(self) -> str:
        r = self._run("capture-pane", "-p", "-t", "e2e", check=False)
        return r.stdout

    def alive(self) -> bool:
        return self._run("has-session", "-t", "e2e", check=False).returncode == 0

    def wait_exit(self, timeout: float = 15) -> bool:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if not self.alive():
                return True
            time.sleep(0.1)
        return False

    def close(self) -> None:
        self._run("kill-server", check=False)
