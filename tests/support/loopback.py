"""Loopback HTTP servers that speak Ollama's, Anthropic's and OpenAI's wire protocols, for the provider tests.

A :class:`LoopbackServer` listens on 127.0.0.1 (an ephemeral port) in a
thread, records every request it gets (:attr:`LoopbackServer.requests`), and
answers each one with the next *step* of its script (``server.script(...)``),
or with its ``default`` step once the script is used up. A step is a callable
``step(handler, request)`` that writes the whole response; the functions
below build the steps the tests need:

- generic: :func:`json_reply`, :func:`hang` (read the request, never answer),
  :func:`chunked` (HTTP/1.1 chunked body, optionally stalling after N chunks);
- Ollama (``POST /api/chat``, and ``/api/generate`` for raw completion):
  :func:`ollama_answer` (JSON or NDJSON stream, following the request's
  ``stream`` flag and path), :func:`ollama_stream`, :func:`ollama_error`,
  :func:`ollama_model_not_found`;
- Anthropic (``POST /v1/messages``): :func:`anthropic_answer` (a message, or
  an SSE stream: message_start, content_block_start, ping,
  content_block_delta/text_delta..., content_block_stop, message_delta,
  message_stop), :func:`anthropic_stream`, :func:`anthropic_error`,
  :func:`anthropic_stream_error` (an ``error`` event inside a 200 stream);
- OpenAI (``POST /v1/chat/completions`` and ``/v1/completions``):
  :func:`openai_answer` (a completion, or SSE ``data:`` chunks ending in
  ``[DONE]`` when the request streams), :func:`openai_stream`,
  :func:`openai_error`.

An answer's text may be a function of the request (``Reply``), for a model
that echoes its prompt: :func:`prompt_of` gives what a request asked.

Stalls and hangs wait on the server's release event, which ``close()`` sets,
so no thread outlives the test for long.
"""

from __future__ import annotations

import json
import socket
import threading
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MAX_WAIT = 30.0  # the longest a stalled or hanging step waits for release


@dataclass
class Request:
    """One request the server received."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    data: Any = field(default=None)

    @property
    def json(self) -> Any:
        return self.data


Step = Callable[["_Handler", Request], None]
Reply = str | Callable[[Request], str]  # an answer's text, or how to make it from the request


def _text(reply: Reply, request: Request) -> str:
    return reply(request) if callable(reply) else reply


def prompt_of(request: Request) -> str:
    """What a model request asked: its messages (system first) or its raw prompt, as one text."""
    data = request.json or {}
    if isinstance(data.get("prompt"), str):
        return data["prompt"]
    parts = [data["system"]] if isinstance(data.get("system"), str) else []
    parts += [m["content"] for m in data.get("messages", []) if isinstance(m.get("content"), str)]
    return "\n".join(parts)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
        pass

    def _serve(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else b""
        try:
            data = json.loads(body) if body else None
        except ValueError:
            data = None
        headers = {name.lower(): value for name, value in self.headers.items()}
        request = Request(self.command, self.path, headers, body, data)
        owner = self.server.owner
        with owner.lock:
            owner.requests.append(request)
            step = owner.steps.popleft() if owner.steps else owner.default
        try:
            if step is None:
                json_reply({"error": "no scripted response"}, status=500)(self, request)
            else:
                step(self, request)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    do_GET = do_POST = do_PUT = do_DELETE = _serve

    # helpers for steps
    def start(self, status: int, headers: Mapping[str, str]) -> None:
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()

    def write_chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):X}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def end_chunks(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def wait_for_release(self) -> None:
        self.server.owner.release.wait(MAX_WAIT)
        self.close_connection = True


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: LoopbackServer


class LoopbackServer:
    """A scripted HTTP server on 127.0.0.1 that records what it receives."""

    def __init__(self, default: Step | None = None) -> None:
        self.requests: list[Request] = []
        self.steps: deque[Step] = deque()
        self.default = default
        self.lock = threading.Lock()
        self.release = threading.Event()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.owner = self
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)
        self._thread.start()

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def script(self, *steps: Step) -> LoopbackServer:
        """Answer the next requests with ``steps``, in order."""
        with self.lock:
            self.steps.extend(steps)
        return self

    def close(self) -> None:
        self.release.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)

    def __enter__(self) -> LoopbackServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def closed_port_url() -> str:
    """The URL of a 127.0.0.1 port that nothing listens on (connections are refused)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


# --- generic steps -----------------------------------------------------------------------------------

def json_reply(obj: Any, status: int = 200, headers: Mapping[str, str] | None = None) -> Step:
    payload = json.dumps(obj).encode()

    def step(handler: _Handler, request: Request) -> None:
        handler.start(status, {"Content-Type": "application/json", "Content-Length": str(len(payload)),
                               **(headers or {})})
        handler.wfile.write(payload)
        handler.wfile.flush()

    return step


def hang() -> Step:
    """Read the request and never answer (until the server closes)."""

    def step(handler: _Handler, request: Request) -> None:
        handler.wait_for_release()

    return step


def chunked(chunks: Iterable[bytes], content_type: str, *, stall_after: int | None = None,
            status: int = 200, headers: Mapping[str, str] | None = None,
            resume: threading.Event | None = None) -> Step:
    """A chunked body; with ``stall_after``, stop sending after that many chunks and keep the socket open
    (until ``resume`` is set, when given: then send the rest)."""
    chunks = list(chunks)

    def step(handler: _Handler, request: Request) -> None:
        handler.start(status, {"Content-Type": content_type, "Transfer-Encoding": "chunked",
                               **(headers or {})})
        for index, chunk in enumerate(chunks):
            if stall_after is not None and index == stall_after:
                if resume is None:
                    handler.wait_for_release()
                    return
                resume.wait(MAX_WAIT)
            handler.write_chunk(chunk)
        handler.end_chunks()

    return step


# --- Ollama ------------------------------------------------------------------------------------------

CREATED_AT = "2025-01-01T00:00:00.000000Z"


def _ollama_body(model: str, content: str, done: bool, raw: bool = False) -> dict[str, Any]:
    body: dict[str, Any] = {"model": model, "created_at": CREATED_AT, "done": done}
    if raw:  # /api/generate
        body["response"] = content
    else:
        body["message"] = {"role": "assistant", "content": content}
    if done:
        body.update(done_reason="stop", total_duration=1000, load_duration=10, prompt_eval_count=5,
                    prompt_eval_duration=100, eval_count=3, eval_duration=200)
    return body


def ollama_stream(pieces: Iterable[str], *, stall_after: int | None = None) -> Step:
    """An NDJSON stream: one line per piece (``message.content``), then a ``done: true`` line."""
    pieces = list(pieces)

    def step(handler: _Handler, request: Request) -> None:
        model = (request.json or {}).get("model", "m")
        raw = request.path == "/api/generate"
        lines = [_ollama_body(model, piece, False, raw) for piece in pieces] + [
            _ollama_body(model, "", True, raw)]
        chunked([(json.dumps(line) + "\n").encode() for line in lines], "application/x-ndjson",
                stall_after=stall_after)(handler, request)

    return step


def ollama_answer(reply: Reply) -> Step:
    """The answer: one JSON object, or an NDJSON stream of its words when the request streams.

    A chat answer for ``/api/chat``, a ``response`` for ``/api/generate``.
    """

    def step(handler: _Handler, request: Request) -> None:
        data, text = request.json or {}, _text(reply, request)
        if data.get("stream", True):
            ollama_stream(_pieces(text))(handler, request)
        else:
            body = _ollama_body(data.get("model", "m"), text, True, request.path == "/api/generate")
            json_reply(body)(handler, request)

    return step


def ollama_error(status: int, message: str, headers: Mapping[str, str] | None = None) -> Step:
    return json_reply({"error": message}, status=status, headers=headers)


def ollama_model_not_found(model: str) -> Step:
    return ollama_error(404, f'model "{model}" not found, try pulling it first')


# --- Anthropic ---------------------------------------------------------------------------------------

def _anthropic_message(model: str, text: str) -> dict[str, Any]:
    return {"id": "msg_loopback", "type": "message", "role": "assistant", "model": model,
            "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5}}


def _sse(event: str, data: Mapping[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def anthropic_stream(pieces: Iterable[str], *, stall_after: int | None = None) -> Step:
    """The SSE events of a streamed message whose text is ``pieces`` (one text_delta each)."""
    pieces = list(pieces)

    def step(handler: _Handler, request: Request) -> None:
        model = (request.json or {}).get("model", "m")
        start = _anthropic_message(model, "")
        start.update(content=[], stop_reason=None, usage={"input_tokens": 10, "output_tokens": 1})
        events = [
            _sse("message_start", {"type": "message_start", "message": start}),
            _sse("content_block_start", {"type": "content_block_start", "index": 0,
                                         "content_block": {"type": "text", "text": ""}}),
            _sse("ping", {"type": "ping"}),
        ]
        events += [_sse("content_block_delta", {"type": "content_block_delta", "index": 0,
                                                "delta": {"type": "text_delta", "text": piece}})
                   for piece in pieces]
        events += [
            _sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
            _sse("message_delta", {"type": "message_delta",
                                   "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                                   "usage": {"output_tokens": 5}}),
            _sse("message_stop", {"type": "message_stop"}),
        ]
        chunked(events, "text/event-stream", stall_after=stall_after,
                headers={"request-id": "req_loopback"})(handler, request)

    return step


def anthropic_answer(reply: Reply) -> Step:
    """The answer: a message, or an SSE stream of its words when the request streams."""

    def step(handler: _Handler, request: Request) -> None:
        data, text = request.json or {}, _text(reply, request)
        if data.get("stream"):
            anthropic_stream(_pieces(text))(handler, request)
        else:
            json_reply(_anthropic_message(data.get("model", "m"), text),
                       headers={"request-id": "req_loopback"})(handler, request)

    return step


def anthropic_error(status: int, kind: str, message: str, headers: Mapping[str, str] | None = None) -> Step:
    body = {"type": "error", "error": {"type": kind, "message": message}, "request_id": "req_loopback"}
    return json_reply(body, status=status, headers={"request-id": "req_loopback", **(headers or {})})


def anthropic_stream_error(kind: str, message: str) -> Step:
    """A 200 stream that starts a message, then sends an ``error`` event."""

    def step(handler: _Handler, request: Request) -> None:
        start = _anthropic_message((request.json or {}).get("model", "m"), "")
        start.update(content=[], stop_reason=None)
        events = [_sse("message_start", {"type": "message_start", "message": start}),
                  _sse("error", {"type": "error", "error": {"type": kind, "message": message}})]
        chunked(events, "text/event-stream")(handler, request)

    return step


# --- OpenAI ------------------------------------------------------------------------------------------

def _openai_chunk(request: Request, piece: str, finish: str | None) -> dict[str, Any]:
    model = (request.json or {}).get("model", "m")
    if request.path.endswith("/chat/completions"):
        delta = {"role": "assistant", "content": piece} if piece else {}
        choice: dict[str, Any] = {"index": 0, "delta": delta, "finish_reason": finish}
        kind = "chat.completion.chunk"
    else:
        choice = {"index": 0, "text": piece, "logprobs": None, "finish_reason": finish}
        kind = "text_completion"
    return {"id": "cmpl-loopback", "object": kind, "created": 1700000000, "model": model, "choices": [choice]}


def openai_stream(pieces: Iterable[str], *, stall_after: int | None = None,
                  resume: threading.Event | None = None) -> Step:
    """SSE ``data:`` chunks, one per piece (chat deltas or completion text, by path), a usage
    chunk (10 tokens in, 5 out) when the request asks for one, then ``[DONE]`` (see
    ``chunked`` for ``stall_after`` and ``resume``)."""
    pieces = list(pieces)

    def step(handler: _Handler, request: Request) -> None:
        chunks = [_openai_chunk(request, piece, None) for piece in pieces]
        chunks.append(_openai_chunk(request, "", "stop"))
        if ((request.json or {}).get("stream_options") or {}).get("include_usage"):
            chunks.append({**_openai_chunk(request, "", None), "choices": [], "usage": {
                "prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
        events = [f"data: {json.dumps(chunk)}\n\n".encode() for chunk in chunks] + [b"data: [DONE]\n\n"]
        chunked(events, "text/event-stream", stall_after=stall_after, resume=resume)(handler, request)

    return step


def openai_answer(reply: Reply) -> Step:
    """The answer: a (chat) completion, or an SSE stream of its words when the request streams."""

    def step(handler: _Handler, request: Request) -> None:
        data, text = request.json or {}, _text(reply, request)
        if data.get("stream"):
            openai_stream(_pieces(text))(handler, request)
            return
        usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        if request.path.endswith("/chat/completions"):
            choice: dict[str, Any] = {"index": 0, "message": {"role": "assistant", "content": text},
                                      "finish_reason": "stop"}
            kind = "chat.completion"
        else:
            choice, kind = {"index": 0, "text": text, "logprobs": None, "finish_reason": "stop"}, (
                "text_completion")
        json_reply({"id": "cmpl-loopback", "object": kind, "created": 1700000000,
                    "model": data.get("model", "m"), "choices": [choice], "usage": usage})(handler, request)

    return step


def openai_error(status: int, message: str, headers: Mapping[str, str] | None = None,
                 kind: str = "invalid_request_error") -> Step:
    body = {"error": {"message": message, "type": kind, "param": None, "code": None}}
    return json_reply(body, status=status, headers=headers)


def echo_api_key(status: int = 401) -> Step:
    """An error whose body repeats the key it received (a server that leaks it back).

    The key is taken from ``x-api-key`` or from ``authorization: Bearer ...``
    (anthropic 2.x sends the API key as a bearer token).
    """

    def step(handler: _Handler, request: Request) -> None:
        key = api_key_of(request) or ""
        anthropic_error(status, "authentication_error", f"invalid x-api-key: {key}")(handler, request)

    return step


def api_key_of(request: Request) -> str | None:
    """The API key a request carried, in ``x-api-key`` or as an ``authorization`` bearer token."""
    if request.headers.get("x-api-key"):
        return request.headers["x-api-key"]
    auth = request.headers.get("authorization", "")
    return auth[len("Bearer "):] if auth.startswith("Bearer ") else None


def _pieces(text: str) -> list[str]:
    """``text`` split into word-sized pieces that join back to it."""
    pieces, current = [], ""
    for char in text:
        current += char
        if char in " \n":
            pieces.append(current)
            current = ""
    if current:
        pieces.append(current)
    return pieces or [""]


# --- tool calling: one scripted model turn, in each protocol -----------------------------------------
#
# A turn is text and tool calls; ``calls`` are (name, arguments) pairs, where arguments are
# a dict, or a str sent as it is (JSON that does not parse, for the malformed-arguments
# tests; Ollama's client only reads objects). Usage is counted from the request and the
# answer, a token per four bytes, so benchmarks compare like with like.

TOOL_PROTOCOLS = ("anthropic", "ollama", "openai")
Call = tuple[str, Any]


def tool_turn(protocol: str, text: str = "", calls: Iterable[Call] = (), *,
              stall_after: int | None = None) -> Step:
    """One model turn in ``protocol``'s tool-calling wire format, streamed when the request
    streams; ``stall_after`` stops a stream after that many chunks (and keeps it open)."""
    builder = {"anthropic": _anthropic_tool_turn, "ollama": _ollama_tool_turn,
               "openai": _openai_tool_turn}[protocol]
    return builder(text, list(calls), stall_after)


def tool_error(protocol: str, status: int, message: str,
               headers: Mapping[str, str] | None = None) -> Step:
    """An HTTP error in ``protocol``'s error format (429, 500, ...)."""
    if protocol == "anthropic":
        kind = "rate_limit_error" if status == 429 else "api_error"
        return anthropic_error(status, kind, message, headers)
    if protocol == "ollama":
        return ollama_error(status, message, headers)
    body = {"error": {"message": message, "type": "rate_limit_exceeded" if status == 429
                      else "server_error", "param": None, "code": None}}
    return json_reply(body, status=status, headers=headers)


def usage_of(request: Request, answer: str) -> tuple[int, int]:
    """Input and output tokens of a request and its answer: a token per four bytes."""
    return max(len(request.body) // 4, 1), len(answer.encode()) // 4 + 1


def turn_text(text: str, calls: list[Call]) -> str:
    """All a turn says, as its output tokens are counted."""
    return text + "".join(name + (args if isinstance(args, str) else json.dumps(args))
                          for name, args in calls)


def _arguments_json(arguments: Any) -> str:
    return arguments if isinstance(arguments, str) else json.dumps(arguments)


def _halves(text: str) -> list[str]:
    middle = len(text) // 2
    return [text[:middle], text[middle:]] if middle else [text]


def _anthropic_tool_turn(text: str, calls: list[Call], stall_after: int | None) -> Step:
    def step(handler: _Handler, request: Request) -> None:
        data = request.json or {}
        model = data.get("model", "m")
        tokens_in, tokens_out = usage_of(request, turn_text(text, calls))
        stop = "tool_use" if calls else "end_turn"
        ids = [f"toolu_{request_number(handler)}_{index}" for index in range(len(calls))]
        if not data.get("stream"):
            content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
            content += [{"type": "tool_use", "id": ident, "name": name, "input": arguments}
                        for ident, (name, arguments) in zip(ids, calls, strict=True)]
            message = _anthropic_message(model, "")
            message.update(content=content, stop_reason=stop,
                           usage={"input_tokens": tokens_in, "output_tokens": tokens_out})
            json_reply(message)(handler, request)
            return
        start = _anthropic_message(model, "")
        start.update(content=[], stop_reason=None, usage={"input_tokens": tokens_in, "output_tokens": 1})
        events = [_sse("message_start", {"type": "message_start", "message": start})]
        index = 0
        if text:
            events.append(_sse("content_block_start", {"type": "content_block_start", "index": 0,
                                                       "content_block": {"type": "text", "text": ""}}))
            events += [_sse("content_block_delta", {"type": "content_block_delta", "index": 0,
                                                    "delta": {"type": "text_delta", "text": piece}})
                       for piece in _pieces(text)]
            events.append(_sse("content_block_stop", {"type": "content_block_stop", "index": 0}))
            index = 1
        for ident, (name, arguments) in zip(ids, calls, strict=True):
            events.append(_sse("content_block_start", {
                "type": "content_block_start", "index": index,
                "content_block": {"type": "tool_use", "id": ident, "name": name, "input": {}}}))
            events += [_sse("content_block_delta", {
                "type": "content_block_delta", "index": index,
                "delta": {"type": "input_json_delta", "partial_json": piece}})
                for piece in _halves(_arguments_json(arguments))]
            events.append(_sse("content_block_stop", {"type": "content_block_stop", "index": index}))
            index += 1
        events += [
            _sse("message_delta", {"type": "message_delta",
                                   "delta": {"stop_reason": stop, "stop_sequence": None},
                                   "usage": {"output_tokens": tokens_out}}),
            _sse("message_stop", {"type": "message_stop"}),
        ]
        chunked(events, "text/event-stream", stall_after=stall_after,
                headers={"request-id": "req_loopback"})(handler, request)

    return step


def _ollama_tool_turn(text: str, calls: list[Call], stall_after: int | None) -> Step:
    def step(handler: _Handler, request: Request) -> None:
        data = request.json or {}
        model = data.get("model", "m")
        tokens_in, tokens_out = usage_of(request, turn_text(text, calls))
        tool_calls = [{"function": {"name": name, "arguments": arguments}} for name, arguments in calls]
        done = _ollama_body(model, "", True)
        done.update(done_reason="stop", prompt_eval_count=tokens_in, eval_count=tokens_out)
        if not data.get("stream", True):
            done["message"] = {"role": "assistant", "content": text, "tool_calls": tool_calls}
            json_reply(done)(handler, request)
            return
        lines = [_ollama_body(model, piece, False) for piece in (_pieces(text) if text else [])]
        if tool_calls:
            line = _ollama_body(model, "", False)
            line["message"]["tool_calls"] = tool_calls
            lines.append(line)
        lines.append(done)
        chunked([(json.dumps(line) + "\n").encode() for line in lines], "application/x-ndjson",
                stall_after=stall_after)(handler, request)

    return step


def _openai_tool_turn(text: str, calls: list[Call], stall_after: int | None) -> Step:
    def step(handler: _Handler, request: Request) -> None:
        data = request.json or {}
        model = data.get("model", "m")
        tokens_in, tokens_out = usage_of(request, turn_text(text, calls))
        usage = {"prompt_tokens": tokens_in, "completion_tokens": tokens_out,
                 "total_tokens": tokens_in + tokens_out}
        finish = "tool_calls" if calls else "stop"
        ids = [f"call_{request_number(handler)}_{index}" for index in range(len(calls))]
        head = {"id": "chatcmpl-loopback", "created": 1700000000, "model": model}
        if not data.get("stream"):
            message: dict[str, Any] = {"role": "assistant", "content": text or None}
            if calls:
                message["tool_calls"] = [
                    {"id": ident, "type": "function",
                     "function": {"name": name, "arguments": _arguments_json(arguments)}}
                    for ident, (name, arguments) in zip(ids, calls, strict=True)]
            json_reply({**head, "object": "chat.completion", "usage": usage, "choices": [
                {"index": 0, "message": message, "finish_reason": finish}]})(handler, request)
            return

        def chunk(delta: dict[str, Any], reason: str | None = None) -> bytes:
            body = {**head, "object": "chat.completion.chunk",
                    "choices": [{"index": 0, "delta": delta, "finish_reason": reason}]}
            return f"data: {json.dumps(body)}\n\n".encode()

        events = [chunk({"role": "assistant", "content": piece}) for piece in (_pieces(text) if text else [])]
        for index, (ident, (name, arguments)) in enumerate(zip(ids, calls, strict=True)):
            events.append(chunk({"tool_calls": [{"index": index, "id": ident, "type": "function",
                                                 "function": {"name": name, "arguments": ""}}]}))
            events += [chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
                       for piece in _halves(_arguments_json(arguments))]
        events.append(chunk({}, finish))
        if (data.get("stream_options") or {}).get("include_usage"):
            last = {**head, "object": "chat.completion.chunk", "choices": [], "usage": usage}
            events.append(f"data: {json.dumps(last)}\n\n".encode())
        events.append(b"data: [DONE]\n\n")
        chunked(events, "text/event-stream", stall_after=stall_after)(handler, request)

    return step


def request_number(handler: _Handler) -> int:
    """How many requests the handler's server has received (this one included)."""
    return len(handler.server.owner.requests)
