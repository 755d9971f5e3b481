"""Harbor's own opencode and mini-swe-agent agents, installed beforehand from the registries.

bench/compare runs them as `-a compare_agents:OfflineOpenCode` and
`-a compare_agents:OfflineMiniSweAgent` (bench/ on PYTHONPATH). Only `install` differs from
Harbor's: Harbor's installs fetch nvm and Node from GitHub (opencode) and uv and a Python
from astral.sh (mini-swe-agent), which a machine that reaches only the package registries
cannot do. Here bench/compare has installed `opencode-ai` from npm and `mini-swe-agent` from
PyPI into its work folder on this machine, which the host environment
(hx_harbor.host:HostEnvironment) shows read-only inside every trial; `install` checks that
the copy runs there and puts it where Harbor's `run` looks for it. Configuration, the
command line, and the reading of tokens and cost stay Harbor's.
"""

import os
import shlex
from typing import override

from harbor.agents.installed.mini_swe_agent import MiniSweAgent
from harbor.agents.installed.opencode import OpenCode
from harbor.environments.base import BaseEnvironment


def _prefix(variable: str, agent: str) -> str:
    value = os.environ.get(variable)
    if not value:
        raise RuntimeError(
            f"{agent}: {variable} is not set: bench/compare sets it to the copy it "
            "installed from the registry"
        )
    return value


class OfflineOpenCode(OpenCode):
    """Harbor's opencode with `opencode-ai` from npm in COMPARE_OPENCODE_PREFIX."""

    @override
    async def install(self, environment: BaseEnvironment) -> None:
        # npm's bin folder, linked into /root/.local/bin (the trial's own home), which the
        # PATH bench/compare passes by --ae names: run() calls plain `opencode`.
        binary = os.path.join(
            _prefix("COMPARE_OPENCODE_PREFIX", "opencode"), "node_modules", ".bin", "opencode"
        )
        await self.exec_as_agent(
            environment,
            command=(
                'mkdir -p "$HOME/.local/bin" && '
                f'ln -sf {shlex.quote(binary)} "$HOME/.local/bin/opencode" && '
                "opencode --version"
            ),
        )


class OfflineMiniSweAgent(MiniSweAgent):
    """Harbor's mini-swe-agent with `mini-swe-agent` from PyPI in the venv COMPARE_MINI_VENV."""

    @override
    def get_version_command(self) -> str | None:
        # Harbor's asks `uv tool list`, and there is no uv here; the CLI has no --version.
        python = os.path.join(_prefix("COMPARE_MINI_VENV", "mini-swe-agent"), "bin", "python")
        return f"{shlex.quote(python)} -c 'import minisweagent; print(minisweagent.__version__)'"

    @override
    def parse_version(self, stdout: str) -> str:
        # minisweagent prints a banner on import; the version is the last line.
        lines = stdout.strip().splitlines()
        return lines[-1].strip() if lines else ""

    @override
    async def install(self, environment: BaseEnvironment) -> None:
        # Harbor's run() puts $HOME/.local/bin first on PATH, where uv would have put it.
        binary = os.path.join(
            _prefix("COMPARE_MINI_VENV", "mini-swe-agent"), "bin", "mini-swe-agent"
        )
        await self.exec_as_agent(
            environment,
            command=(
                'mkdir -p "$HOME/.local/bin" && '
                f'ln -sf {shlex.quote(binary)} "$HOME/.local/bin/mini-swe-agent" && '
                '"$HOME/.local/bin/mini-swe-agent" --help >/dev/null'
            ),
        )
