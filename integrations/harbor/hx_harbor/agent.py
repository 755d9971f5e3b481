"""hx as a Harbor installed agent: `harbor run -a hx_harbor:HxAgent -m deepseek/deepseek-flash`.

The binary is uploaded, not installed: hx is one file, so the task environment needs neither
network nor compiler, and every trial runs exactly the build under test. The hx on the PATH
of the machine that runs Harbor is taken unless `--ak hx_binary=PATH` names another.

Inside a task environment the container is the sandbox. hx runs with `--sandbox off`: its
default sandbox lets commands write only in the workspace and a private /tmp that vanishes
with the run, while tasks install packages, write under /usr, /etc and /root and leave files
in /tmp for their tests; and its pod needs user namespaces, which Docker's default seccomp
profile refuses. The guard is off too (`--no-guard`), since a task may need `curl ... | sh`
to install a tool and nobody is there to approve anything. `--ak sandbox=workspace-write`
and `--ak guard=true` put them back, to measure hx as a user would run it.
"""

import json
import shlex
import shutil
from pathlib import Path, PurePosixPath
from typing import Annotated, Any, Literal, override

from harbor.agents.capabilities import AgentCapabilities
from harbor.agents.installed.base import (
    BaseInstalledAgent,
    NonZeroAgentExitCodeError,
    with_prompt_template,
)
from harbor.agents.options import Cli, InstalledAgentOptions
from harbor.environments.base import BaseEnvironment, ExecResult
from harbor.models.agent.context import AgentContext
from pydantic import Field

from hx_harbor import errors, events

# Where the adapter puts its files in the task environment: Harbor's own folder for installed
# agents, created by BaseInstalledAgent.setup as root.
INSTALL_DIR = PurePosixPath("/installed-agent")
HX = INSTALL_DIR / "hx"
# hx's user config folder ($XDG_CONFIG_HOME): the user file needs no `hx trust`, and a
# project's own .hx/config.toml, which would, stays as the task left it.
CONFIG_HOME = INSTALL_DIR / "config"
INSTRUCTION = INSTALL_DIR / "instruction.md"

# The providers hx knows, with the variables it reads their key and base URL from
# (hx's README, "Providers and models"). The adapter forwards exactly these into the task
# environment: Harbor passes nothing of the host's environment by itself.
PROVIDERS: dict[str, tuple[str | None, str | None]] = {
    "deepseek": ("DEEPSEEK_API_KEY", "DEEPSEEK_BASE_URL"),
    "openai": ("OPENAI_API_KEY", "OPENAI_BASE_URL"),
    "openrouter": ("OPENROUTER_API_KEY", None),
    "ollama": (None, None),
}
DEFAULT_PROVIDER = "deepseek"

# hx's exit codes (README, "Exit codes").
EXIT_ANSWERED = 0
EXIT_LIMIT = 3


class HxOptions(InstalledAgentOptions):
    """`--ak key=value` options of hx_harbor:HxAgent (`harbor agent schema hx_harbor:HxAgent`)."""

    version: str | None = Field(
        default=None,
        description="Refuse an hx binary of another version (as hx --version prints it).",
    )
    hx_binary: str | None = Field(
        default=None,
        description="The hx binary to upload into the task environment, on the machine "
        "that runs Harbor (default: the hx on its PATH). It must run there: a Linux x86-64 "
        "build old enough in glibc for the task images.",
    )
    reasoning_effort: Annotated[
        Literal["off", "low", "high", "max"] | None, Cli("--effort")
    ] = Field(
        default=None,
        description="hx's --effort (Harbor's --effort): off, low, high or max. Omit for "
        "the model's own default.",
    )
    max_turns: Annotated[int | None, Cli("--max-turns")] = Field(
        default=None, ge=1, description="hx's --max-turns (default 200)."
    )
    max_cost: Annotated[float | None, Cli("--max-cost")] = Field(
        default=None,
        gt=0,
        description="hx's --max-cost, in the model's price currency (dollars for DeepSeek).",
    )
    retries: int | None = Field(
        default=None,
        ge=0,
        le=100,
        description="How often hx retries a failed request (its network.retries, default "
        "4); 0 leaves retrying to Harbor's --max-retries.",
    )
    sandbox: Annotated[
        Literal["off", "workspace-write", "read-only"], Cli("--sandbox")
    ] = Field(
        default="off",
        description="hx's --sandbox. off by default: the task's container is the sandbox.",
    )
    tools: Annotated[Literal["default", "minimal"] | None, Cli("--tools")] = Field(
        default=None,
        description="hx's --tools: default (the seed's tools) or minimal (one persistent "
        "bash and str_replace_editor, as DeepSeek's Terminal-Bench minimal mode). Omit for "
        "hx's default.",
    )
    guard: bool = Field(
        default=False,
        description="Keep hx's guard, which refuses destructive commands (off by default: "
        "nobody approves anything in a trial, and the container is thrown away).",
    )


def split_model(model_name: str | None) -> tuple[str, str | None]:
    """Harbor's `provider/model` as hx's --provider and --model.

    Only the first `/` separates: `openrouter/anthropic/claude-sonnet-4` is OpenRouter's
    `anthropic/claude-sonnet-4`. A name without a provider goes to DeepSeek, hx's default.
    """
    if not model_name:
        return DEFAULT_PROVIDER, None
    provider, sep, model = model_name.partition("/")
    if not sep:
        return DEFAULT_PROVIDER, model_name
    if provider not in PROVIDERS:
        raise ValueError(
            f"hx has no provider {provider!r} (model {model_name!r}): it knows "
            f"{', '.join(sorted(PROVIDERS))}. Any other OpenAI-compatible server: "
            "-m openai/MODEL with OPENAI_BASE_URL and OPENAI_API_KEY."
        )
    if not model:
        raise ValueError(f"model {model_name!r} names no model after {provider}/")
    return provider, model


def resolve_binary(path: str | None) -> Path:
    """The hx binary to upload: the one named, else the one on PATH; a clear error otherwise."""
    if path is None:
        found = shutil.which("hx")
        if found is None:
            raise ValueError(
                "hx_harbor:HxAgent uploads the hx binary into the task environment, and "
                "there is no hx on PATH: install it (cargo install --locked --path .) or "
                "name one with --ak hx_binary=PATH"
            )
        return Path(found)
    binary = Path(path).expanduser()
    if not binary.is_file():
        raise ValueError(f"--ak hx_binary={path}: no such file")
    if not binary.stat().st_mode & 0o111:
        raise ValueError(f"--ak hx_binary={path}: not executable")
    return binary


def config_toml(
    retries: int | None,
    mcp_servers: list[dict[str, Any]],
) -> str:
    """hx's user config for a trial.

    Checkpoints are off: they let a person see and undo the agent's changes, nobody will in
    a container that is thrown away, and on a large repository (SWE-bench's) they cost a
    look at every file on each turn that changes one.
    """
    lines = ["[checkpoints]", "enabled = false"]
    if retries is not None:
        lines += ["", "[network]", f"retries = {retries}"]
    for server in mcp_servers:
        lines += ["", f"[mcp_servers.{_toml_key(server['name'])}]"]
        for key, value in server.items():
            if key != "name":
                lines.append(f"{key} = {_toml_value(value)}")
    return "\n".join(lines) + "\n"


def _toml_key(key: str) -> str:
    # A bare key when TOML allows one; hx's server names are letters, digits, _ and -.
    return key if key and all(c.isalnum() or c in "_-" for c in key) else json.dumps(key)


def _toml_value(value: Any) -> str:
    # JSON's strings, lists and numbers are TOML's; a table becomes an inline table.
    if isinstance(value, dict):
        inner = ", ".join(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in value.items())
        return "{ " + inner + " }"
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return json.dumps(value)


def literal_task(instruction: str) -> str:
    """The instruction as hx takes it literally: a task whose first word starts with `/`
    would name a command or skill (`/fix args`), and `//` says "a literal slash"."""
    stripped = instruction.lstrip()
    return "/" + stripped if stripped.startswith("/") else instruction


class HxAgent(BaseInstalledAgent):
    """hx, uploaded into the task environment and run as `hx agent --json`."""

    capabilities = AgentCapabilities(
        reasoning_effort=True,
        atif=True,
        skills=True,
        mcp_servers=True,
        mcp_http_headers=True,
    )
    options_model = HxOptions

    @staticmethod
    @override
    def name() -> str:
        return "hx"

    @classmethod
    @override
    def preflight(
        cls,
        kwargs: dict[str, Any] | None = None,
        env: Any = None,
    ) -> None:
        super().preflight(kwargs, env)
        resolve_binary((kwargs or {}).get("hx_binary"))

    @classmethod
    @override
    def check_model_credentials(
        cls,
        connection: Any,
        *,
        kwargs: dict[str, Any],
        env: Any,
        explicit_env: Any = None,
    ) -> None:
        # Before any trial starts: a missing key would otherwise fail every trial alike.
        provider, _ = split_model(kwargs.get("model_name"))
        key_var, _ = PROVIDERS[provider]
        if key_var is not None and not env.get(key_var):
            raise ValueError(
                f"hx needs {key_var} for provider {provider}: export it, put it in the "
                f"--env-file, or pass --ae {key_var}=..."
            )

    @property
    def _options(self) -> HxOptions:
        assert isinstance(self.options, HxOptions)
        return self.options

    @override
    def get_version_command(self) -> str | None:
        return f"{HX} --version"

    @override
    def parse_version(self, stdout: str) -> str:
        # `hx 0.1.0`
        return stdout.strip().removeprefix("hx").strip()

    def _mcp_entries(self) -> list[dict[str, Any]]:
        """The task's MCP servers in hx's config keys (Codex's)."""
        entries: list[dict[str, Any]] = []
        headers = self.mcp_header_env
        for server in self.mcp_servers:
            if server.transport == "stdio":
                entries.append(
                    {"name": server.name, "command": server.command, "args": server.args}
                )
            elif server.transport == "streamable-http":
                entry: dict[str, Any] = {"name": server.name, "url": server.url}
                refs = headers.refs.get(server.name, {})
                if refs:
                    # hx reads headers from its config only, so the resolved values go into
                    # the config file, which is uploaded readable by the agent's user alone.
                    entry["http_headers"] = {
                        name: headers.env[var] for name, var in refs.items()
                    }
                entries.append(entry)
            else:
                raise ValueError(
                    f"MCP server {server.name!r} uses transport {server.transport!r}: hx "
                    "speaks MCP over stdio and streamable HTTP. Set transport = "
                    "'streamable-http' in the task's [[environment.mcp_servers]] (Harbor "
                    "takes 'sse' when it is left out)."
                )
        return entries

    @override
    async def install(self, environment: BaseEnvironment) -> None:
        binary = resolve_binary(self._options.hx_binary)
        await environment.upload_file(binary, str(HX))
        await self.exec_as_root(environment, command=f"chmod 755 {HX}")
        version = await environment.exec(command=f"{HX} --version")
        if version.return_code != 0:
            raise RuntimeError(
                f"the uploaded hx ({binary}) does not start in the task environment "
                f"(exit {version.return_code}): {(version.stderr or version.stdout or '').strip()}"
                " -- a binary built against a newer glibc than the image has fails so"
            )
        found = self.parse_version(version.stdout or "")
        if self._options.version is not None and found != self._options.version:
            raise RuntimeError(
                f"--ak version={self._options.version}, but {binary} is hx {found}"
            )
        self._version = found
        await self.exec_as_root(
            environment, command=f"mkdir -p {CONFIG_HOME / 'hx'} && chmod 755 {CONFIG_HOME}"
        )
        await self._upload_config_text(
            environment,
            content=config_toml(self._options.retries, self._mcp_entries()),
            remote_path=str(CONFIG_HOME / "hx" / "config.toml"),
            filename="config.toml",
        )

    def _run_env(self, provider: str) -> dict[str, str]:
        """The environment of the hx run: the provider's key and base URL, and hx's folders."""
        env = {
            "XDG_CONFIG_HOME": str(CONFIG_HOME),
            # Sessions go with the agent's logs, so a trial's folder keeps hx's own record.
            "XDG_STATE_HOME": str(self.environment_logs_dir / "hx-state"),
            "NO_COLOR": "1",
        }
        for var in PROVIDERS[provider]:
            if var is not None and (value := self._get_env(var)):
                env[var] = value
        return env

    def _command(self, provider: str, model: str | None) -> str:
        args = [str(HX), "agent", "--json", "--provider", provider]
        if model is not None:
            args += ["--model", model]
        if not self._options.guard:
            args.append("--no-guard")
        flags = self.build_cli_flags()
        log = self.environment_logs_dir / "hx.jsonl"
        # The task comes on stdin: no argument-length limit, and not in `ps`.
        return (
            f"set -o pipefail; {shlex.join(args)} {flags} < {INSTRUCTION} "
            f"| tee {shlex.quote(str(log))}"
        )

    async def _copy_skills(self, environment: BaseEnvironment, env: dict[str, str]) -> None:
        """The task's skills into ~/.agents/skills, hx's user skills root: beside the
        repository rather than in it, so the work tree the tests (or SWE-bench's diff) see
        holds only what the agent changed."""
        if not self.skills_dir:
            return
        source = shlex.quote(self.skills_dir)
        result = await environment.exec(
            command=(
                f"[ -d {source} ] || {{ echo 'no such folder' >&2; exit 1; }}; "
                f'mkdir -p "$HOME/.agents/skills" && cp -R {source}/. "$HOME/.agents/skills/"'
            ),
            env=env,
        )
        if result.return_code != 0:
            self.logger.warning(
                "hx: the task's skills folder %s was not copied: %s",
                self.skills_dir,
                (result.stderr or result.stdout or "").strip(),
            )

    async def _export_trajectory(
        self, environment: BaseEnvironment, env: dict[str, str], session_id: str
    ) -> None:
        """`hx sessions export ID --format atif` into the agent's logs as trajectory.json."""
        probe = await environment.exec(
            command=f"{HX} sessions export --help >/dev/null 2>&1", env=env
        )
        if probe.return_code != 0:
            self.logger.warning(
                "hx: this hx has no `hx sessions export`: the trial gets no trajectory.json"
            )
            return
        target = self.environment_logs_dir / "trajectory.json"
        result = await environment.exec(
            command=shlex.join(
                [str(HX), "sessions", "export", session_id, "--format", "atif", "-o", str(target)]
            ),
            env=env,
        )
        if result.return_code != 0:
            self.logger.warning(
                "hx: `hx sessions export %s` failed (exit %s): %s",
                session_id,
                result.return_code,
                (result.stderr or result.stdout or "").strip(),
            )

    @override
    @with_prompt_template
    async def run(
        self, instruction: str, environment: BaseEnvironment, context: AgentContext
    ) -> None:
        provider, model = split_model(self.model_name)
        env = self._run_env(provider)
        await self._copy_skills(environment, env)
        await self._upload_config_text(
            environment,
            content=literal_task(instruction),
            remote_path=str(INSTRUCTION),
            filename="instruction.md",
        )
        command = self._command(provider, model)
        result = await environment.exec(command=command, env=env)
        run = events.parse(result.stdout)
        fill_context(context, run, result.return_code)
        if run.session_id is not None:
            await self._export_trajectory(environment, env, run.session_id)
        if result.return_code == EXIT_ANSWERED:
            return
        if result.return_code == EXIT_LIMIT:
            # --max-turns, --max-cost or [loop]: a limit the user set was reached. Not a
            # failure of the harness: the tests grade what the agent left.
            self.logger.warning(
                "hx: stopped at a limit: %s", run.failure.message if run.failure else ""
            )
            return
        raise self._failure(command, result, run)

    def _failure(
        self, command: str, result: ExecResult, run: events.Run
    ) -> NonZeroAgentExitCodeError:
        failure = run.failure or events.Failure(
            message=(result.stderr or "").strip() or f"hx exited {result.return_code}"
        )
        error = errors.classify(failure)
        detail = (
            f"hx exited {result.return_code}: {failure.message}"
            + (f" (kind {failure.kind})" if failure.kind else "")
            + (f" (status {failure.status})" if failure.status else "")
        )
        if error is NonZeroAgentExitCodeError:
            # Harbor's own patterns know many agents' wordings; they read hx's words about
            # the failure (stderr and the failure event), never the tool output in items.
            generic = self._classify_exec_error(
                command,
                ExecResult(
                    stdout=failure.message, stderr=result.stderr, return_code=result.return_code
                ),
            )
            if type(generic) is not NonZeroAgentExitCodeError:
                return type(generic)(detail)
        return error(detail)

    @override
    def populate_context_post_run(self, context: AgentContext) -> None:
        # Only called when run() left the context empty (it was cancelled, or timed out):
        # read what the run wrote to its log before it stopped.
        log = self.logs_dir / "hx.jsonl"
        if log.is_file():
            fill_context(context, events.parse(log.read_text(errors="replace")), None)


def fill_context(context: AgentContext, run: events.Run, exit_code: int | None) -> None:
    """Harbor's figures from hx's: `input_tokens` counts the cached ones, as Harbor's do."""
    metadata: dict[str, Any] = {"hx_exit_code": exit_code}
    if run.session_id is not None:
        metadata["hx_session_id"] = run.session_id
    if run.hx_version is not None:
        metadata["hx_version"] = run.hx_version
    usage = run.usage
    if usage is not None:
        context.n_input_tokens = usage.input_tokens
        context.n_cache_tokens = usage.cached_input_tokens
        context.n_output_tokens = usage.output_tokens
        metadata["reasoning_output_tokens"] = usage.reasoning_output_tokens
        if usage.cost is not None:
            # Harbor's figure is in dollars; a price set in another currency
            # ([pricing."MODEL"] currency = "CNY") is kept in the metadata only.
            if usage.currency in (None, "USD"):
                context.cost_usd = usage.cost
            metadata["cost"] = usage.cost
            metadata["currency"] = usage.currency
        if usage.subagent_cost is not None:
            metadata["subagent_cost"] = usage.subagent_cost
    if run.failure is not None:
        metadata["hx_error"] = {
            "message": run.failure.message,
            "kind": run.failure.kind,
            "status": run.failure.status,
        }
    context.metadata = {**(context.metadata or {}), **metadata}

