"""What the model tiers share: settings, prompts, sampling, and every request under the
retry and stream policy, for writing programs and for tool-calling chat alike.

A vendor subclasses :class:`ModelProvider`: it names its client package, its settings and
how it connects (``where``, ``api_key``, ``open_client``, ``is_transient``, ``describe``),
implements ``chat`` (a system prompt and a user turn) and, when its API has one,
``complete`` (one raw text, for a model without a chat template). ``generate`` and ``fix``
build the prompts (:mod:`lackpy_kernel.infer.prompt`) and pick one of the two by the
provider's ``raw`` setting. Its tool-calling chat subclasses :class:`ToolChat` over it.
Both send every request through :meth:`ModelProvider.exchange` (the retry policy, a fresh
client per attempt) and read streams through :meth:`ModelProvider.stream_chunks` (the stall
detection), so they retry, time out and redact keys alike.

The settings every model tier takes besides its own (:data:`COMMON_KEYS`: the retry
policy's, ``model``, ``temperature``, ``stream`` and these; ``num_predict`` is Ollama's name
for ``max_tokens``):

- ``stop`` (list of strings): where a reply ends; default the prompt
  layout's (:data:`~lackpy_kernel.infer.prompt.DEFAULT_STOP`); ``[]`` sends none.
- ``max_tokens``: the most tokens one reply may have; default sized from the
  prompt's examples (:func:`~lackpy_kernel.infer.prompt.default_max_tokens`).
- ``raw`` (false): send one completion text instead of chat messages.
- ``correction_rounds`` (2): model calls the correction chain may make after
  the first (a retry, then fixers, and run-time feedback); 0 leaves only the free cleanup.
- ``samples`` (1): programs asked for at first; with more than one, the valid ones are
  dry-run and a program of the largest group that agrees on its output is returned (the
  tier's ``temperature``, or the server's default; ``temperature = 0`` is refused, as the
  samples would all be the same). One intent costs at most ``samples + correction_rounds``
  calls.
- ``constrain`` (unset): ``"grammar"`` sends the lackpy grammar, restricted to the kit's
  tools and the builtins (:func:`lackpy_kernel.infer.grammar.lackpy_gbnf`), as a decoding
  constraint, to servers that take llama.cpp's GBNF ``grammar`` (llama.cpp's server,
  llama-cpp-python's OpenAI-compatible server; the ``openai`` plugin only). A server that
  refuses it is asked again without it, with a warning, and not sent it again
  (``grammar_status`` says which; ``probe_grammar()`` asks the server once, for
  ``lackpy doctor``).
- ``dry_run`` (true): run each valid program before it is returned, in the sandbox with
  its file changes dropped, and feed a run-time error (or an answer of the wrong shape:
  :data:`lackpy_kernel.infer._tryout.SHAPES`) back as a correction round; false returns the
  first valid program.
- ``price_in``, ``price_out``: the price per million input and output tokens; each call's
  tokens (the server's own counts) and cost go to the usage record (:mod:`lackpy_kernel.telemetry`).

Tool calling uses the connection, the model, ``temperature``, ``stream``, ``max_tokens``
and the retry policy; the program-writing settings (``stop``, ``raw``,
``correction_rounds``) do not apply to it.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Generic, Self, TypeVar

from lackpy_kernel.errors import ProviderError
from lackpy_kernel.infer._provider import DEFAULT_ROUNDS, DEFAULT_SAMPLES, KIND_MODEL
from lackpy_kernel.infer.grammar import lackpy_gbnf, whole_statements
from lackpy_kernel.infer.prompt import DEFAULT_STOP, Prompt, fixer_prompt, generate_prompt, program_slot
from lackpy_kernel.telemetry import PRICE_KEYS, Prices, count_tokens, model_call

from ._chat import ChatRequest, ModelTurn, OnText, ToolChatModel
from ._policy import POLICY_KEYS, RetryPolicy, default_describe, default_is_transient, iter_with_idle_timeout
from ._settings import check_settings, optional_int, optional_number, optional_str, require_bool, string_list

FALLBACK_MAX_TOKENS = 512  # when neither the settings nor the dispatcher give a limit
TextCallback = Callable[[str], None]
Turn = tuple[str, str]  # (role, text) of a chat turn: "user" or "assistant"
T = TypeVar("T")
# What one attempt sends: given a fresh client and the secrets to redact, the answer.
Send = Callable[[Any, tuple[str, ...]], Awaitable[T]]


@dataclass(frozen=True)
class Sampling:
    """How one call samples: stop sequences, the token limit, and who sees the text as it streams."""

    stop: tuple[str, ...] = DEFAULT_STOP
    max_tokens: int = FALLBACK_MAX_TOKENS
    on_text: TextCallback | None = None
    grammar: str | None = None  # a GBNF grammar the reply must follow (``constrain``)


@dataclass(frozen=True)
class GenerationSettings:
    """A model tier's settings for writing programs (see the module doc); None means the default."""

    stop: tuple[str, ...] | None = None
    max_tokens: int | None = None
    raw: bool = False
    correction_rounds: int = DEFAULT_ROUNDS
    samples: int = DEFAULT_SAMPLES
    dry_run: bool = True
    constrain: str | None = None

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any], *, token_key: str = "max_tokens",
                      raw_allowed: bool = True, constraints: tuple[str, ...] = ()
                      ) -> GenerationSettings:
        """The settings from a provider table; ``ValueError`` naming a bad key."""
        constrain = optional_str("constrain", settings.get("constrain"))
        if constrain is not None and constrain not in constraints:
            offered = (f"this provider takes: {', '.join(map(repr, constraints))}" if constraints
                       else "this provider's API takes no decoding constraint; remove `constrain`")
            raise ValueError(f"constrain = {constrain!r} is not offered: {offered}")
        stop = settings.get("stop")
        rounds = optional_int("correction_rounds", settings.get("correction_rounds"), minimum=0)
        samples = optional_int("samples", settings.get("samples"), minimum=1)
        if (samples or 1) > 1 and settings.get("temperature") == 0:
            raise ValueError(f"samples = {samples} at temperature = 0 asks for the same program "
                             f"{samples} times; raise temperature (0.7, say) or leave samples out")
        raw = require_bool("raw", settings.get("raw", False))
        if raw and not raw_allowed:
            raise ValueError("raw completion is not offered by this provider's API; remove `raw`")
        return cls(
            stop=None if stop is None else tuple(string_list("stop", stop)),
            max_tokens=optional_int(token_key, settings.get(token_key), minimum=1),
            raw=raw,
            correction_rounds=DEFAULT_ROUNDS if rounds is None else rounds,
            samples=DEFAULT_SAMPLES if samples is None else samples,
            dry_run=require_bool("dry_run", settings.get("dry_run", True)),
            constrain=constrain,
        )


GENERATION_KEYS = ("stop", "max_tokens", "raw", "correction_rounds", "samples", "dry_run", "constrain")
COMMON_KEYS = frozenset({"plugin", "model", "temperature", "stream", *GENERATION_KEYS, *POLICY_KEYS,
                         *PRICE_KEYS})


class ModelProvider:
    """Base of the model tiers: ``generate`` and ``fix`` are one prompt, sent as chat or as raw
    text, and every request goes through ``exchange``.

    A subclass sets the class attributes below, implements ``where``, ``open_client`` and
    ``chat`` (and ``complete``, ``api_key``, ``is_transient``, ``describe`` where its API
    needs them).
    """

    package: ClassVar[str]  # the client package it imports
    extra: ClassVar[str]  # the lackpy extra that installs it
    plugin: ClassVar[str]  # its ``plugin`` name in the config
    label: ClassVar[str]  # how messages name the vendor ("Ollama")
    stream_label: ClassVar[str]  # how stall messages name its stream ("the Ollama stream")
    default_model: ClassVar[str]
    settings_keys: ClassVar[frozenset[str]] = COMMON_KEYS
    token_key: ClassVar[str] = "max_tokens"  # the settings' name for the token limit
    raw_allowed: ClassVar[bool] = True
    constraints: ClassVar[tuple[str, ...]] = ()  # the ``constrain`` values its API takes
    kind = KIND_MODEL
    prices = Prices()  # ``price_in`` / ``price_out`` per million tokens
    usage_file: Path | None = None  # where each call is recorded (the workspace's usage record)

    def __init__(
        self,
        name: str,
        *,
        model: str,
        temperature: float | None = None,
        stream: bool = True,
        policy: RetryPolicy | None = None,
        generation: GenerationSettings | None = None,
    ) -> None:
        self._name = name
        self.model = model
        self.temperature = temperature
        self.stream = stream
        self.policy = policy if policy is not None else RetryPolicy()
        self.generation = generation if generation is not None else GenerationSettings()
        # with ``constrain``: "not sent yet", "taken" or "refused: why" (``lackpy doctor``)
        self.grammar_status = "not sent yet"

    @classmethod
    def from_settings(cls, name: str, settings: Mapping[str, Any]) -> Self:
        """A provider from a ``[inference.providers.<name>]`` table; a bad or unknown key raises
        ``ValueError`` naming it."""
        check_settings(cls.plugin, name, settings, cls.settings_keys)
        provider = cls(
            name,
            **cls.own_settings(settings),
            model=optional_str("model", settings.get("model", cls.default_model)) or cls.default_model,
            temperature=optional_number("temperature", settings.get("temperature"), minimum=0.0),
            stream=require_bool("stream", settings.get("stream", True)),
            policy=RetryPolicy.from_settings(settings),
            generation=GenerationSettings.from_settings(settings, token_key=cls.token_key,
                                                        raw_allowed=cls.raw_allowed,
                                                        constraints=cls.constraints),
        )
        provider.prices = Prices.from_settings(settings)
        return provider

    @classmethod
    def own_settings(cls, settings: Mapping[str, Any]) -> dict[str, Any]:
        """The vendor's own keyword arguments from a settings table (checked: ``ValueError``)."""
        return {}

    @property
    def name(self) -> str:
        return self._name

    @property
    def correction_rounds(self) -> int:
        """Model calls the correction chain may make after the first."""
        return self.generation.correction_rounds

    @property
    def samples(self) -> int:
        """Programs asked for at first (see the module doc)."""
        return self.generation.samples

    @property
    def dry_run(self) -> bool:
        """Whether the dispatcher dry-runs this tier's valid programs (see the module doc)."""
        return self.generation.dry_run

    def available(self) -> bool:
        """True when the client package is installed; makes no request."""
        return self.unavailable_reason() is None

    def unavailable_reason(self) -> str | None:
        """Why the provider cannot be used now (a missing package, say), or None."""
        return None if _installed(self.package) else self.missing_package_message()

    def health_url(self) -> str | None:
        """A URL of the model's server that answers a cheap GET when the server is up; None
        where there is no server of one's own to probe (an API reached with a key)."""
        return None

    def missing_package_message(self) -> str:
        """What to install when the client package is missing."""
        return f"the {self.package} package is not installed: pip install 'lackpy-kernel[{self.extra}]'"

    def tool_chat(self) -> ToolChatModel:
        """This model as a tool-calling chat (its vendor's :class:`ToolChat`)."""
        raise NotImplementedError

    def import_client(self) -> Any:
        """The client package; ProviderError saying what to install when it is missing."""
        try:
            return importlib.import_module(self.package)
        except ImportError as exc:
            raise ProviderError(self.missing_package_message()) from exc

    # -- writing programs -------------------------------------------------------------------

    async def generate(
        self,
        intent: str,
        namespace_desc: str,
        config: dict[str, Any] | None = None,
        error_feedback: list[str] | None = None,
    ) -> str | None:
        """The model's raw answer (None when it is empty); ``error_feedback`` makes it a retry."""
        return await self.ask(generate_prompt(intent, namespace_desc, config, error_feedback), config)

    async def fix(
        self,
        intent: str,
        program: str | None,
        errors: list[str],
        namespace_desc: str,
        config: dict[str, Any] | None = None,
    ) -> str | None:
        """A fresh conversation asking the model to repair ``program`` (None: no program yet)."""
        return await self.ask(fixer_prompt(intent, program, errors, namespace_desc, config), config)

    async def ask(self, prompt: Prompt, config: Mapping[str, Any] | None = None) -> str | None:
        """Send ``prompt`` as chat turns or, with ``raw``, as one completion; the answer, or None
        when empty. Under the grammar, a statement the token limit cut is dropped."""
        sampling = self.sampling(config)
        if self.generation.raw:
            text = await self.complete(prompt.completion, sampling)
        else:
            text = await self.chat(prompt.system, prompt.turns(), sampling)
        if sampling.grammar is not None:  # a grammatical prefix: only the token limit cuts it
            text = whole_statements(text)
        return text if text.strip() else None

    def sampling(self, config: Mapping[str, Any] | None = None) -> Sampling:
        """The settings' stop and token limit, else the dispatcher's (``config``), else the defaults."""
        config = config or {}
        stop = self.generation.stop
        if stop is None:
            stop = tuple(config.get("stop", DEFAULT_STOP))
        max_tokens = self.generation.max_tokens or config.get("max_tokens") or FALLBACK_MAX_TOKENS
        grammar = None
        if self.generation.constrain == "grammar" and not self.grammar_status.startswith("refused"):
            grammar = lackpy_gbnf(config.get("tool_names") or config.get("allowed_names") or (),
                                  stops=stop)
        return Sampling(stop, int(max_tokens), config.get("on_text"), grammar)

    async def probe_grammar(self) -> str:
        """With ``constrain = "grammar"``, send one token's request with the grammar and say
        whether the server took it (``grammar_status``: "taken" or "refused: why"); "" without
        ``constrain``. Raises ProviderError when the server cannot be reached."""
        if self.generation.constrain != "grammar":
            return ""
        await self.ask(Prompt("", program_slot("probe")), {"max_tokens": 1, "tool_names": []})
        return self.grammar_status

    async def chat(self, system: str, turns: Sequence[Turn], sampling: Sampling) -> str:
        """One exchange with the model: the system prompt, then ``turns`` ((role, text), the
        roles ``user`` and ``assistant`` in turn, the last ``user``); its answer text."""
        raise NotImplementedError

    async def complete(self, prompt: str, sampling: Sampling) -> str:
        """One raw completion of ``prompt``: the text the model adds."""
        raise ProviderError(f"provider {self.name!r} cannot send raw completions; remove `raw`")

    # -- every request: the connection, the retry policy, the stall detection ----------------

    @property
    def where(self) -> str:
        """The server requests go to."""
        raise NotImplementedError

    @property
    def what(self) -> str:
        """How messages name this provider: the vendor, its name, model and server."""
        return f"{self.label} provider {self.name!r} (model {self.model!r} at {self.where})"

    def api_key(self) -> str | None:
        """The API key, read from the environment now; None when none is needed.

        Raises ProviderError when one is needed and not set."""
        return None

    def open_client(self, sdk: Any, key: str | None) -> Any:
        """A fresh client of the vendor's package ``sdk``, its own retries off."""
        raise NotImplementedError

    def is_transient(self, error: BaseException) -> bool:
        """Whether another attempt may succeed where ``error`` failed."""
        return default_is_transient(error)

    def describe(self, error: BaseException) -> str:
        """What went wrong and what to do, for the final error's message."""
        return default_describe(error)

    async def exchange(self, send: Send[T]) -> T:
        """``send(client, secrets)`` under the retry policy, on a fresh client each attempt
        (closed after it), counted as one model call (its tokens, its cost, in ``usage_file``).
        ``secrets`` (the key, if any) are redacted from what this raises;
        ``send`` redacts them from what it returns. Raises ProviderError
        (ProviderTimeoutError, StreamStallError) once the attempts are used up."""
        sdk = self.import_client()  # ProviderError naming the extra if missing
        key = self.api_key()
        secrets = (key,) if key else ()

        async def attempt() -> T:
            client = self.open_client(sdk, key)
            try:
                return await send(client, secrets)
            finally:
                await client.close()

        with model_call(provider=self.plugin, tier=self.name, model=self.model, prices=self.prices,
                        usage_file=self.usage_file):
            result: T = await self.policy.run(attempt, self.is_transient, what=self.what,
                                              describe=self.describe, secrets=secrets)
            if isinstance(result, ModelTurn):
                count_tokens(result.usage.input_tokens, result.usage.output_tokens)
        return result

    def stream_chunks(self, chunks: AsyncIterable[T]) -> AsyncIterator[T]:
        """The chunks of a streamed answer; StreamStallError past ``stream_idle_timeout``."""
        return iter_with_idle_timeout(chunks, self.policy.stream_idle_timeout,
                                      what=f"{self.stream_label} from {self.where}")

    async def collect_text(self, chunks: AsyncIterable[T], text_of: Callable[[T], str],
                           on_text: TextCallback | None) -> str:
        """The text of a streamed answer: ``text_of`` each chunk, joined; ``on_text`` sees the
        text so far. StreamStallError past ``stream_idle_timeout``."""
        text = ""
        async for chunk in self.stream_chunks(chunks):
            piece = text_of(chunk)
            if piece:
                text += piece
                if on_text is not None:
                    on_text(text)
        return text


P = TypeVar("P", bound=ModelProvider)


class ToolChat(Generic[P]):
    """A vendor's tool-calling chat over its program writer ``tier`` (made from the same
    settings), whose connection, model, temperature, stream flag, token limit and retry
    policy it uses. A subclass implements ``body`` and ``turn``."""

    def __init__(self, tier: P) -> None:
        self.tier = tier
        self.name = tier.name
        self.model = tier.model

    async def complete(self, request: ChatRequest, on_text: OnText | None = None) -> ModelTurn:
        """One model turn; raises ProviderError (ProviderTimeoutError, StreamStallError; the key
        redacted) when the policy gives up."""
        body = self.body(request)
        return await self.tier.exchange(lambda client, secrets: self.turn(client, body, on_text, secrets))

    def body(self, request: ChatRequest) -> dict[str, Any]:
        """The request as the vendor's API takes it."""
        raise NotImplementedError

    async def turn(self, client: Any, body: dict[str, Any], on_text: OnText | None,
                   secrets: tuple[str, ...]) -> ModelTurn:
        """One attempt: send ``body`` on ``client``, streamed or not; the turn, ``secrets`` redacted."""
        raise NotImplementedError


def _installed(package: str) -> bool:
    """Whether ``package`` can be imported, without importing it."""
    try:
        return importlib.util.find_spec(package) is not None
    except (ImportError, ValueError):  # ValueError: blocked with sys.modules[package] = None
        return False


def turn_messages(turns: Sequence[Turn]) -> list[dict[str, str]]:
    """``turns`` as chat messages (``role``, ``content``), as every chat API takes them."""
    return [{"role": role, "content": text} for role, text in turns]
