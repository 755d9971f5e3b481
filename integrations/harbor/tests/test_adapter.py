"""The adapter's pure parts: reading hx's events, classifying failures, mapping options.

Run by tests/it/harbor.rs with Harbor's Python: `python -m unittest discover -s
integrations/harbor/tests`.
"""

import unittest

from harbor.agents.installed.base import (
    AgentAuthenticationError,
    ApiInternalServerError,
    ApiOverloadedError,
    ApiRateLimitError,
    ApiUsageLimitError,
    ContextWindowExceededError,
    ModelNotFoundError,
    NetworkConnectionError,
    NonZeroAgentExitCodeError,
)
from harbor.agents.options import compile_cli_from_options
from harbor.models.agent.context import AgentContext

from hx_harbor import agent, errors, events, host

STREAM = "\n".join(
    [
        '{"type":"thread.started","thread_id":"01a2","schema_version":1,"hx_version":"0.1.0",'
        '"model":"deepseek-flash","provider":"deepseek","base_url":"x","resumed":false}',
        '{"type":"turn.started"}',
        # Tool output that says "rate limit" is the model's business, not hx's.
        '{"type":"item.completed","item":{"id":"item_0","type":"command_execution",'
        '"aggregated_output":"API error 429: rate limit"}}',
        '{"type":"error","message":"API error 503: busy; retry 1/4 in 0.5 s",'
        '"retry":{"attempt":1,"max":4,"delay_ms":500}}',
    ]
)


class EventsTest(unittest.TestCase):
    def test_a_completed_run(self) -> None:
        run = events.parse(
            STREAM
            + '\n{"type":"turn.completed","usage":{"input_tokens":2400,'
            '"cached_input_tokens":2048,"output_tokens":300,"reasoning_output_tokens":29,'
            '"cost":0.000238944,"currency":"USD"}}\n'
        )
        self.assertEqual(run.session_id, "01a2")
        self.assertTrue(run.answered)
        self.assertIsNone(run.failure)
        self.assertEqual(
            run.usage,
            events.Usage(2400, 2048, 300, 29, 0.000238944, "USD", None),
        )
        context = AgentContext()
        agent.fill_context(context, run, 0)
        self.assertEqual(
            (context.n_input_tokens, context.n_cache_tokens, context.n_output_tokens),
            (2400, 2048, 300),
        )
        self.assertEqual(context.cost_usd, 0.000238944)

    def test_a_cost_in_another_currency_is_not_dollars(self) -> None:
        run = events.parse(
            '{"type":"turn.completed","usage":{"input_tokens":1,"cached_input_tokens":0,'
            '"output_tokens":1,"cost":0.5,"currency":"CNY"}}'
        )
        context = AgentContext()
        agent.fill_context(context, run, 0)
        self.assertIsNone(context.cost_usd)
        self.assertEqual((context.metadata or {})["currency"], "CNY")

    def test_a_failed_run_today_and_with_a_kind(self) -> None:
        today = events.parse(
            STREAM
            + '\n{"type":"turn.failed","error":{"message":"API error 429: slow down"},'
            '"usage":{"input_tokens":0,"cached_input_tokens":0,"output_tokens":0}}'
        )
        self.assertEqual(today.failure, events.Failure("API error 429: slow down"))
        tomorrow = events.parse(
            '{"type":"turn.failed","error":{"message":"m","kind":"overloaded","status":503}}'
        )
        self.assertEqual(tomorrow.failure, events.Failure("m", "overloaded", 503))

    def test_a_run_that_could_not_start(self) -> None:
        run = events.parse(
            '{"type":"error","message":"DEEPSEEK_API_KEY is not set"}\nnot json\n'
        )
        self.assertEqual(run.failure, events.Failure("DEEPSEEK_API_KEY is not set"))


class ClassifyTest(unittest.TestCase):
    def check(self, expected: type[NonZeroAgentExitCodeError], failure: events.Failure) -> None:
        self.assertIs(errors.classify(failure), expected, failure)

    def test_by_kind(self) -> None:
        for kind, expected in [
            ("rate_limit", ApiRateLimitError),
            ("quota", ApiUsageLimitError),
            ("overloaded", ApiOverloadedError),
            ("server", ApiInternalServerError),
            ("context_overflow", ContextWindowExceededError),
            ("auth", AgentAuthenticationError),
            ("not_found", ModelNotFoundError),
            ("network", NetworkConnectionError),
            ("stream", ApiInternalServerError),
            ("hook", NonZeroAgentExitCodeError),
        ]:
            # The kind wins over a message that would say otherwise.
            self.check(expected, events.Failure("API error 500: x", kind, None))

    def test_a_429_that_is_an_empty_account(self) -> None:
        self.check(
            ApiUsageLimitError,
            events.Failure("You exceeded your current quota", "rate_limit", 429),
        )
        self.check(ApiUsageLimitError, events.Failure("API error 402: Insufficient Balance"))

    def test_by_status_without_a_kind(self) -> None:
        self.check(ApiOverloadedError, events.Failure("no words", None, 503))
        self.check(ApiRateLimitError, events.Failure("API error 429: Too Many Requests"))
        self.check(AgentAuthenticationError, events.Failure("API error 401: bad key"))
        self.check(ModelNotFoundError, events.Failure("API error 404: no such model"))
        self.check(ApiInternalServerError, events.Failure("API error 500: boom (after 5 attempts)"))
        self.check(
            ContextWindowExceededError,
            events.Failure(
                "API error 400: This model's maximum context length is 131072 tokens"
            ),
        )

    def test_by_words(self) -> None:
        self.check(
            NetworkConnectionError,
            events.Failure(
                "cannot connect to http://127.0.0.1:9/: connection refused: no server is "
                "running on 127.0.0.1:9 (after 5 attempts)"
            ),
        )
        self.check(
            ApiInternalServerError,
            events.Failure("API error in stream: upstream overloaded, try again"),
        )
        self.check(NonZeroAgentExitCodeError, events.Failure("a hook stopped the run"))


class OptionsTest(unittest.TestCase):
    def test_models(self) -> None:
        self.assertEqual(agent.split_model("deepseek/deepseek-flash"), ("deepseek", "deepseek-flash"))
        self.assertEqual(
            agent.split_model("openrouter/anthropic/claude-sonnet-4"),
            ("openrouter", "anthropic/claude-sonnet-4"),
        )
        self.assertEqual(agent.split_model("deepseek-v4-pro"), ("deepseek", "deepseek-v4-pro"))
        self.assertEqual(agent.split_model(None), ("deepseek", None))
        with self.assertRaisesRegex(ValueError, "hx has no provider 'anthropic'"):
            agent.split_model("anthropic/claude")

    def test_options_are_checked(self) -> None:
        with self.assertRaisesRegex(ValueError, "reasoning_effort"):
            agent.HxAgent.parse_options({"reasoning_effort": "medium"})
        with self.assertRaisesRegex(ValueError, "max_turns"):
            agent.HxAgent.parse_options({"max_turns": "0"})
        with self.assertRaisesRegex(ValueError, "Unknown option 'max_turn'"):
            agent.HxAgent.parse_options({"max_turn": "5"})
        options = agent.HxAgent.parse_options(
            {"reasoning_effort": "max", "max_turns": "30", "max_cost": "0.5"}
        )
        assert isinstance(options, agent.HxOptions)
        self.assertEqual((options.max_turns, options.max_cost, options.guard), (30, 0.5, False))
        self.assertFalse([f for f in compile_cli_from_options(options) if "--tools" in f])
        with self.assertRaisesRegex(ValueError, "tools"):
            agent.HxAgent.parse_options({"tools": "fast"})
        minimal = agent.HxAgent.parse_options({"tools": "minimal"})
        assert isinstance(minimal, agent.HxOptions)
        self.assertIn("--tools minimal", compile_cli_from_options(minimal))

    def test_a_task_is_taken_literally(self) -> None:
        self.assertEqual(agent.literal_task("fix it"), "fix it")
        self.assertEqual(agent.literal_task("/app/x.py is broken"), "//app/x.py is broken")
        self.assertEqual(agent.literal_task("  /fix"), "//fix")

    def test_config(self) -> None:
        self.assertEqual(
            agent.config_toml(
                0,
                [
                    {"name": "fs", "command": "npx", "args": ["-y", "server", "."]},
                    {"name": "api", "url": "http://x/mcp", "http_headers": {"X-Key": 'a"b'}},
                ],
            ),
            "[checkpoints]\nenabled = false\n\n[network]\nretries = 0\n\n"
            '[mcp_servers.fs]\ncommand = "npx"\nargs = ["-y", "server", "."]\n\n'
            '[mcp_servers.api]\nurl = "http://x/mcp"\nhttp_headers = { X-Key = "a\\"b" }\n',
        )


class DockerfileTest(unittest.TestCase):
    def test_instructions(self) -> None:
        parsed = host.parse_dockerfile(
            "# comment\nFROM debian\nWORKDIR /app\nRUN a && \\\n  b\nENV A=1 B=\"two words\"\n"
        )
        self.assertEqual(
            [(s.instruction, s.args) for s in parsed.steps],
            [("FROM", "debian"), ("WORKDIR", "/app"), ("RUN", "a &&  b"), ("ENV", 'A=1 B="two words"')],
        )
        self.assertEqual(host._env_pairs('A=1 B="two words"'), {"A": "1", "B": "two words"})
        self.assertEqual(host._env_pairs("PATH /x:/y"), {"PATH": "/x:/y"})
        self.assertEqual(host.expand("${HOME}/bin:$PATH", {"HOME": "/root", "PATH": "/bin"}), "/root/bin:/bin")


if __name__ == "__main__":
    unittest.main()
