"""A Harbor environment without images or a container engine, for offline tests and CI.

`harbor run -e hx_harbor.host:HostEnvironment` runs a task on this machine: each command in
a fresh bubblewrap (`bwrap`, Debian's `bubblewrap`) mount namespace whose root is a tmpfs
holding this machine's top-level folders bound read-only, with the folders a task owns
bound read-write from a folder kept for the trial: Harbor's /logs, /tests, /solution,
/installed-agent and /runtime, the task's WORKDIR, /tmp and /root (HOME). Harbor's paths are
absolute, so they need a namespace of their own; bubblewrap makes one as root or, where
user namespaces are allowed, as any user.

It is for offline tests, not isolation: commands see this machine's files (read-only) and
network, run as root of the namespace, and nothing limits their CPU or memory. A task's
Dockerfile is read, not built: FROM is ignored (this machine's system stands in for the
image), WORKDIR, ENV, COPY / ADD of the task's own files and RUN are applied, USER must be
root, and other instructions are an error. RUN and every command run offline-capable tools
of this machine only: `apt-get install` cannot write /usr here. Processes a command leaves
running end with it, since each command has its namespace.
"""

import asyncio
import io
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, override

from harbor.environments.base import BaseEnvironment, ExecResult, transfer_tar_filter
from harbor.environments.capabilities import EnvironmentCapabilities
from harbor.models.task.config import TaskOS

PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
HOME = "/root"
# The folders every trial writes: Harbor's (models/trial/paths.py EnvironmentPaths), the
# agent's install folder, and a private /tmp and home.
PRIVATE = ("logs", "tests", "solution", "installed-agent", "runtime", "tmp", "root")
# Top-level names never taken from this machine: the namespace gets its own.
OWN = {"proc", "dev", "run"}
# Dockerfile instructions that mean nothing without an image or a container to start.
IGNORED = {"CMD", "ENTRYPOINT", "LABEL", "EXPOSE", "STOPSIGNAL", "MAINTAINER", "VOLUME"}


@dataclass
class Step:
    instruction: str
    args: str


@dataclass
class Dockerfile:
    """The instructions of a task's Dockerfile that the host environment applies."""

    steps: list[Step] = field(default_factory=list)


def parse_dockerfile(text: str) -> Dockerfile:
    """Splits a Dockerfile into instructions: comments dropped, continuations joined."""
    steps: list[Step] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line = pending + line
        pending = ""
        if not line.strip():
            continue
        word, _, rest = line.strip().partition(" ")
        steps.append(Step(word.upper(), rest.strip()))
    if pending.strip():
        raise ValueError("Dockerfile ends inside a continued line")
    return Dockerfile(steps)


_VAR = re.compile(r"\$(?:\{(\w+)\}|(\w+))")


def expand(value: str, env: dict[str, str]) -> str:
    """Dockerfile's `$NAME` and `${NAME}`, from the ENV set so far."""
    return _VAR.sub(lambda m: env.get(m.group(1) or m.group(2), ""), value)


def words(args: str) -> list[str]:
    """An instruction's arguments, in JSON form (`["a", "b"]`) or shell form."""
    stripped = args.strip()
    if stripped.startswith("["):
        parsed = json.loads(stripped)
        if not isinstance(parsed, list) or not all(isinstance(p, str) for p in parsed):
            raise ValueError(f"not a JSON list of strings: {args}")
        return parsed
    return shlex.split(stripped)


class HostEnvironment(BaseEnvironment):
    """Runs each command in a bubblewrap namespace over this machine's root, read-only."""

    def __init__(
        self,
        environment_dir: Path,
        environment_name: str,
        session_id: str,
        trial_paths: Any,
        task_env_config: Any,
        keep_state: bool | str = False,
        *args: Any,
        **kwargs: Any,
    ):
        self._dockerfile = Dockerfile()
        # Set before super().__init__, which validates the definition.
        super().__init__(
            environment_dir,
            environment_name,
            session_id,
            trial_paths,
            task_env_config,
            *args,
            **kwargs,
        )
        # --ek keep_state=true: leave the trial's folder behind, to look into afterwards.
        self._keep_state = str(keep_state).lower() in ("1", "true", "yes")
        self._state: Path | None = None
        self._image_env: dict[str, str] = {}
        self._workdir = PurePosixPath("/")

    @staticmethod
    @override
    def type() -> str:
        return "hx-host"

    @property
    @override
    def capabilities(self) -> EnvironmentCapabilities:
        # Harbor's output folders can be bound straight to the trial's (--ek auto_mounting=true).
        return EnvironmentCapabilities(mounted=True)

    @classmethod
    @override
    def preflight(cls) -> None:
        bwrap = shutil.which("bwrap")
        if bwrap is None:
            raise SystemExit(
                "hx_harbor.host:HostEnvironment needs bubblewrap (bwrap): "
                "apt-get install bubblewrap"
            )
        probe = _bwrap_base(bwrap) + ["--ro-bind", "/", "/", "--", "true"]
        done = subprocess.run(probe, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise SystemExit(
                "hx_harbor.host:HostEnvironment: bwrap cannot make a namespace here "
                f"({done.stderr.strip()}); it needs root or unprivileged user namespaces"
            )

    @override
    def _validate_definition(self) -> None:
        if self.os != TaskOS.LINUX:
            raise ValueError("the host environment runs Linux tasks only")
        dockerfile = self.environment_dir / "Dockerfile"
        if not dockerfile.is_file():
            raise FileNotFoundError(
                f"{dockerfile}: the host environment needs the task's Dockerfile (it "
                "cannot pull an image or run a compose file)"
            )
        self._dockerfile = parse_dockerfile(dockerfile.read_text())
        for step in self._dockerfile.steps:
            if step.instruction == "USER" and step.args.strip() not in ("root", "0", "0:0"):
                raise ValueError(
                    f"Dockerfile USER {step.args}: the host environment runs every command "
                    "as root of its namespace"
                )
            if step.instruction not in IGNORED | {
                "FROM", "WORKDIR", "ENV", "COPY", "ADD", "RUN", "USER", "ARG",
            }:
                raise ValueError(
                    f"Dockerfile {step.instruction}: the host environment applies FROM "
                    "(ignored), WORKDIR, ENV, ARG, COPY, ADD, RUN and USER root only"
                )

    # -- the namespace ------------------------------------------------------------------

    @property
    def _root(self) -> Path:
        if self._state is None:
            raise RuntimeError("the host environment is not started")
        return self._state / "root"

    def _bwrap_args(self, cwd: str) -> list[str]:
        bwrap = shutil.which("bwrap")
        if bwrap is None:
            raise RuntimeError("bwrap is gone from PATH")
        root = self._root
        private = sorted(p.name for p in root.iterdir() if p.is_dir())
        args = _bwrap_base(bwrap)
        for name in sorted(os.listdir("/")):
            if name in private or name in OWN:
                continue
            host = Path("/") / name
            if host.is_symlink():
                args += ["--symlink", os.readlink(host), f"/{name}"]
            else:
                args += ["--ro-bind-try", str(host), f"/{name}"]
        for name in private:
            args += ["--bind", str(root / name), f"/{name}"]
        args += ["--dev", "/dev", "--proc", "/proc", "--tmpfs", "/run"]
        # Harbor's output folders bound to the trial's own, deepest last.
        for mount in sorted(self._host_mounts, key=lambda m: len(str(m["target"]))):
            source, target = str(mount["source"]), str(mount["target"])
            Path(source).mkdir(parents=True, exist_ok=True)
            kind = "--ro-bind" if mount.get("read_only") else "--bind"
            args += [kind, source, target]
        args += ["--chdir", cwd]
        return args

    def _command_env(self, env: dict[str, str] | None) -> dict[str, str]:
        merged = {"PATH": PATH, "HOME": HOME, "LANG": "C.UTF-8", "USER": "root"}
        merged.update(self._image_env)
        merged.update(self._merge_env(env) or {})
        return merged

    async def _run(
        self,
        command: str,
        *,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        stdin: bytes | None = None,
        timeout_sec: float | None = None,
    ) -> tuple[int, bytes, bytes]:
        workdir = cwd or self.task_env_config.workdir or str(self._workdir)
        argv = self._bwrap_args(workdir) + ["--", "bash", "-c", command]
        process = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=self._command_env(env),
            # Its own group, so a timeout ends bwrap and what it started together.
            start_new_session=True,
        )
        try:
            stdout, stderr = await asyncio.wait_for(
                process.communicate(stdin), timeout=timeout_sec
            )
        except TimeoutError:
            _kill(process)
            await process.wait()
            raise RuntimeError(f"Command timed out after {timeout_sec} seconds") from None
        except BaseException:
            # Cancelled (Harbor's own timeout of the phase): nothing may outlive it.
            _kill(process)
            raise
        return process.returncode or 0, stdout, stderr

    # -- Harbor's interface -------------------------------------------------------------

    @override
    async def start(self, force_build: bool) -> None:
        self._state = Path(tempfile.mkdtemp(prefix=f"hx-harbor-{self.environment_name}-"))
        for name in PRIVATE:
            (self._root / name).mkdir(parents=True)
        (self._root / "tmp").chmod(0o1777)
        env: dict[str, str] = {"PATH": PATH, "HOME": HOME}
        workdir = PurePosixPath("/")
        for step in self._dockerfile.steps:
            match step.instruction:
                case "WORKDIR":
                    workdir = workdir / expand(step.args.strip(), env)
                    self._ensure_top(workdir)
                    self._workdir = workdir
                    await self._checked(f"mkdir -p {shlex.quote(str(workdir))}", "/")
                case "ENV":
                    env.update(_env_pairs(expand(step.args, env)))
                    self._image_env = {k: v for k, v in env.items() if k != "HOME"}
                case "ARG":
                    name, _, default = step.args.strip().partition("=")
                    env.setdefault(name, default)
                case "COPY" | "ADD":
                    await self._copy(step, env, workdir)
                case "RUN":
                    command = words(step.args) if step.args.lstrip().startswith("[") else None
                    await self._checked(
                        shlex.join(command) if command else step.args, str(workdir)
                    )
                case _:
                    pass
        if self.task_env_config.workdir:
            self._ensure_top(PurePosixPath(self.task_env_config.workdir))
        await self.ensure_dirs(self._mount_targets(writable_only=True))
        await self._upload_environment_dir_after_start()

    def _ensure_top(self, path: PurePosixPath) -> None:
        """Makes the top-level folder of `path` one of the trial's own, unless it already
        is: a WORKDIR under a folder of this machine (/usr/src/app) would be read-only."""
        if len(path.parts) < 2:
            return
        top = path.parts[1]
        if top in OWN:
            raise ValueError(f"WORKDIR {path}: /{top} is the namespace's own")
        (self._root / top).mkdir(exist_ok=True)

    async def _checked(self, command: str, cwd: str) -> None:
        code, stdout, stderr = await self._run(command, cwd=cwd)
        if code != 0:
            raise RuntimeError(
                f"host environment: `{command}` exited {code}: "
                f"{(stderr or stdout).decode(errors='replace').strip()[-2000:]}"
            )

    async def _copy(self, step: Step, env: dict[str, str], workdir: PurePosixPath) -> None:
        parts = [w for w in words(expand(step.args, env)) if not w.startswith("--")]
        if len(parts) < 2:
            raise ValueError(f"Dockerfile {step.instruction} {step.args}: needs a source and a destination")
        *sources, dest = parts
        target = workdir / dest
        self._ensure_top(target)
        context = self.environment_dir.resolve()
        into_dir = dest.endswith("/") or len(sources) > 1
        for source in sources:
            if "://" in source:
                raise ValueError(f"Dockerfile {step.instruction} {source}: no downloads here")
            local = (context / source).resolve()
            if not local.is_relative_to(context):
                raise ValueError(f"Dockerfile {step.instruction} {source}: outside the task's environment folder")
            if local.is_dir():
                await self.upload_dir(local, str(target))
            elif into_dir:
                await self.upload_file(local, str(target / local.name))
            else:
                await self.upload_file(local, str(target))

    @override
    async def stop(self, delete: bool) -> None:
        if self._state is not None and not self._keep_state:
            shutil.rmtree(self._state, ignore_errors=True)
            self._state = None

    @override
    async def exec(
        self,
        command: str,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        timeout_sec: int | None = None,
        user: str | int | None = None,
    ) -> ExecResult:
        user = self._resolve_user(user)
        if user not in (None, "root", 0, "0"):
            raise ValueError(
                f"the host environment runs every command as root of its namespace; "
                f"the task asks for user {user!r}"
            )
        code, stdout, stderr = await self._run(
            command, cwd=cwd, env=env, timeout_sec=timeout_sec
        )
        return ExecResult(
            stdout=stdout.decode(errors="replace"),
            stderr=stderr.decode(errors="replace"),
            return_code=code,
        )

    async def _untar(self, archive: bytes, target_dir: str) -> None:
        quoted = shlex.quote(target_dir)
        code, stdout, stderr = await self._run(
            f"mkdir -p {quoted} && tar -xf - --no-same-owner -C {quoted}", cwd="/", stdin=archive
        )
        if code != 0:
            raise RuntimeError(
                f"host environment: cannot write into {target_dir}: "
                f"{(stderr or stdout).decode(errors='replace').strip()}"
            )

    @override
    async def upload_file(self, source_path: Path | str, target_path: str) -> None:
        target = PurePosixPath(target_path)
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as tar:
            tar.add(str(source_path), arcname=target.name)
        await self._untar(buffer.getvalue(), str(target.parent))

    @override
    async def upload_dir(self, source_dir: Path | str, target_dir: str) -> None:
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as tar:
            for child in sorted(Path(source_dir).iterdir()):
                tar.add(str(child), arcname=child.name)
        await self._untar(buffer.getvalue(), target_dir)

    @override
    async def download_file(self, source_path: str, target_path: Path | str) -> None:
        code, stdout, stderr = await self._run(f"cat -- {shlex.quote(source_path)}", cwd="/")
        if code != 0:
            raise RuntimeError(
                f"host environment: cannot read {source_path}: "
                f"{stderr.decode(errors='replace').strip()}"
            )
        target = Path(target_path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(stdout)

    @override
    async def download_dir(self, source_dir: str, target_dir: Path | str) -> None:
        code, stdout, stderr = await self._run(
            f"tar -cf - -C {shlex.quote(source_dir)} .", cwd="/"
        )
        if code != 0:
            raise RuntimeError(
                f"host environment: cannot read {source_dir}: "
                f"{stderr.decode(errors='replace').strip()}"
            )
        target = Path(target_dir)
        target.mkdir(parents=True, exist_ok=True)
        with tarfile.open(fileobj=io.BytesIO(stdout), mode="r") as tar:
            tar.extractall(path=target, filter=transfer_tar_filter)


def _bwrap_base(bwrap: str) -> list[str]:
    base = [bwrap, "--die-with-parent", "--unshare-pid", "--unshare-ipc", "--unshare-uts"]
    if os.geteuid() != 0:
        # Root of a user namespace of its own, as a rootless container engine does.
        base += ["--unshare-user", "--uid", "0", "--gid", "0"]
    return base


def _env_pairs(args: str) -> dict[str, str]:
    """ENV's `A=1 B="two words"`, or the old `ENV A one value`."""
    parts = shlex.split(args)
    if parts and "=" not in parts[0]:
        name, _, value = args.strip().partition(" ")
        return {name: value.strip()}
    pairs: dict[str, str] = {}
    for part in parts:
        name, sep, value = part.partition("=")
        if not sep:
            raise ValueError(f"Dockerfile ENV {args}: {part!r} is not NAME=value")
        pairs[name] = value
    return pairs


def _kill(process: asyncio.subprocess.Process) -> None:
    if process.returncode is not None:
        return
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
