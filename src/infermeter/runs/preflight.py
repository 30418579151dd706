"""Before any load: is the endpoint there, does it serve the model, how does it answer?

``preflight`` reads ``/v1/models`` (a list that cannot be read is a note: some
servers answer HTTP 500 offline, llama.cpp accepts any name), then sends one
untimed probe request to learn whether answers stream and carry ``usage``
(which picks the token-count source) and how long one takes. A dead or wrong
endpoint fails in seconds with one line (``SUTConnectionError``, exit 1),
before the run sends any load.
"""

from __future__ import annotations

import dataclasses
import json
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import asdict, dataclass, field
from typing import Any

from infermeter.errors import SUTConnectionError, SUTError
from infermeter.suts.openai_media import API_PATHS, MEDIA_APIS
from infermeter.suts.openai_request import ApiKey, OpenAIConfig, build_body, redact
from infermeter.suts.prompts import PromptSource
from infermeter.suts.sse import StreamOutcome, StreamState, parse_body
from infermeter.suts.token_count import DELTA_EVENTS, RESPONSES, TOKENIZER, USAGE

CHECK_TIMEOUT_S = 4.0  # each look-up; the failures it catches answer at once
PROBE_TOKENS = 16  # enough to see how a stream is shaped, short enough to be quick
PROBE_TIMEOUT_S = 60.0


@dataclass(frozen=True, slots=True)
class Probe:
    """What the one probe request showed."""

    streamed: bool
    usage: bool
    token_events: int
    usage_tokens: int | None
    duration_s: float
    token_source: str


@dataclass(slots=True)
class PreflightReport:
    """Notes for the console and run.json; the probe when it answered."""

    endpoint: str
    models: list[str] | None = None
    probe: Probe | None = None
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "endpoint": self.endpoint,
            "models": self.models,
            "probe": None if self.probe is None else asdict(self.probe),
            "notes": self.notes,
            "warnings": self.warnings,
        }


def api_base(config: OpenAIConfig) -> str:
    """The ``.../v1`` the API paths hang from."""
    base = config.endpoint
    for tail in ("/chat/completions", "/completions", *API_PATHS.values()):
        if base.endswith(tail):
            return base[: -len(tail)]
    return base


def preflight(
    config: OpenAIConfig, prompts: PromptSource, key: ApiKey | None = None
) -> PreflightReport:
    """Check the endpoint (each replica of a fleet); raise ``SUTConnectionError``
    (one line) when one cannot serve. The report is the first replica's.

    Every line it says passes through ``redact`` here: servers and gateways echo
    the ``Authorization`` header in their errors, and these lines reach the
    console, run.json and the store.
    """
    try:
        report = _preflight(config, prompts, key)
    except SUTError as exc:
        raise type(exc)(redact(str(exc), key)) from None
    report.notes = [redact(line, key) for line in report.notes]
    report.warnings = [redact(line, key) for line in report.warnings]
    return report


def _preflight(
    config: OpenAIConfig, prompts: PromptSource, key: ApiKey | None
) -> PreflightReport:
    headers = {"Content-Type": "application/json"}
    if key is not None:
        headers["Authorization"] = key.header()
    reports = []
    for url in config.urls:
        one = dataclasses.replace(config, url=url, replica_urls=())
        report = PreflightReport(endpoint=one.endpoint)
        _check_models(one, report, headers)
        if config.api in MEDIA_APIS:
            # A probe would be a whole transcription, image or video job.
            report.notes.append(f"no probe request for the {config.api} API")
        else:
            _probe(one, prompts, report, headers)
        reports.append(report)
    return reports[0]


# -- /v1/models ------------------------------------------------------------------
def _check_models(
    config: OpenAIConfig,
    report: PreflightReport,
    headers: dict[str, str],
) -> None:
    url = api_base(config) + "/models"
    answer = _fetch(url, None, headers, CHECK_TIMEOUT_S)
    if answer.status != 200:
        report.notes.append(
            f"the model list ({url}) could not be read (HTTP {answer.status}); "
            "the model is checked by the probe instead"
        )
        return
    _refuse_html(answer, url)
    try:
        data = json.loads(answer.body)
        ids = [str(m["id"]) for m in data["data"]]
    except (ValueError, KeyError, TypeError):
        report.notes.append(f"the model list ({url}) is not an OpenAI model list")
        return
    report.models = ids
    if config.model not in ids:
        # Not fatal yet: llama.cpp serves its one model under any name.
        report.notes.append(
            f"model {config.model!r} is not in the server's list ({_names(ids)})"
        )


# -- the probe -------------------------------------------------------------------
def _probe(
    config: OpenAIConfig,
    prompts: PromptSource,
    report: PreflightReport,
    headers: dict[str, str],
) -> None:
    body = _probe_body(config, prompts)
    start = time.perf_counter()
    answer = _fetch(config.endpoint, body, headers, PROBE_TIMEOUT_S)
    duration = time.perf_counter() - start
    _judge_status(config, report, answer, headers)
    if answer.status != 200:
        return
    _refuse_html(answer, config.endpoint)
    try:
        outcome = _outcome(config, answer)
    except SUTError as exc:
        _refuse_foreign(config, str(exc))
        report.warnings.append(f"the probe's answer could not be read: {exc}")
        return
    if not (outcome.token_events or outcome.usage_tokens or outcome.finish_reason):
        _refuse_foreign(config, "no choices, usage or finish reason")
    source = _source(config, outcome)
    report.probe = Probe(
        streamed=outcome.streamed,
        usage=outcome.usage_tokens is not None,
        token_events=outcome.token_events,
        usage_tokens=outcome.usage_tokens,
        duration_s=round(duration, 4),
        token_source=source,
    )
    _explain(config, report, outcome, source, duration)


def _probe_body(config: OpenAIConfig, prompts: PromptSource) -> bytes:
    body = json.loads(build_body(config, prompts.prompt(0)))
    limit = min(int(body.get("max_tokens") or PROBE_TOKENS), PROBE_TOKENS)
    body["max_tokens"] = limit
    if "min_tokens" in body:
        body["min_tokens"] = limit
    return json.dumps(body).encode()


def _judge_status(
    config: OpenAIConfig,
    report: PreflightReport,
    answer: _Answer,
    headers: dict[str, str],
) -> None:
    status, text = answer.status, answer.text()
    if status == 200:
        return
    where = config.endpoint
    if status in (400, 404) and "model" in text.lower() and _unlisted(config, report):
        raise SUTConnectionError(
            f"model {config.model!r} is not served at {where} (HTTP {status}: "
            f"{text[:120]}); pass --model {_hint(report)}"
        )
    if status == 404:
        hint = _v1_hint(config.url) or "check --url and --api"
        raise SUTConnectionError(f"{where} answered HTTP 404 (no such path); {hint}")
    if status in (401, 403):
        fix = (
            "the key sent was refused: check it is this server's, and still valid"
            if "Authorization" in headers
            else "pass the key with --api-key-env VAR"
        )
        raise SUTConnectionError(f"{where} refused the request (HTTP {status}): {fix}")
    if 400 <= status < 500:
        raise SUTConnectionError(
            f"{where} rejected the probe request (HTTP {status}: {text[:160]}); "
            "every request of the run would be rejected the same way"
        )
    report.warnings.append(
        f"the probe request failed (HTTP {status}: {text[:120]}); the run goes on"
    )


def _outcome(config: OpenAIConfig, answer: _Answer) -> StreamOutcome:
    if "text/event-stream" in answer.content_type:
        state = StreamState()
        state.feed(answer.body)
        return state.finish()
    return parse_body(answer.body)


def _source(config: OpenAIConfig, outcome: StreamOutcome) -> str:
    if outcome.usage_tokens is not None:
        return USAGE
    if config.tokenizer_file:
        return TOKENIZER
    return DELTA_EVENTS if outcome.streamed else RESPONSES


def _explain(
    config: OpenAIConfig,
    report: PreflightReport,
    outcome: StreamOutcome,
    source: str,
    duration: float,
) -> None:
    shape = "streamed" if outcome.streamed else "whole (not streamed)"
    usage = "with usage" if outcome.usage_tokens is not None else "without usage"
    report.notes.append(
        f"probe: 1 request answered {shape}, {usage}, "
        f"{outcome.token_events} token chunks in {duration:.2f} s"
    )
    if config.stream and not outcome.streamed:
        report.warnings.append(
            "the server answered whole though stream=true was asked: "
            "TTFT and TPOT cannot be measured"
        )
    if source == DELTA_EVENTS:
        report.warnings.append(
            "the server sends no usage in streams: token counts will be estimated "
            "(one per streamed token chunk); pass --sut-opt tokenizer=DIR_OR_NAME "
            "to re-count the answers' text with the model's tokenizer (close, not "
            "exact: SentencePiece tokenizers may count a token more per answer)"
        )
    elif source == RESPONSES:
        report.warnings.append(
            "non-streamed answers carry no usage: token counts are unknown; pass "
            "--sut-opt tokenizer=DIR_OR_NAME or --sut-opt stream=true"
        )


# -- HTTP ------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class _Answer:
    status: int
    content_type: str
    body: bytes

    def text(self) -> str:
        return self.body[:400].decode("utf-8", "replace").replace("\n", " ").strip()


# The run's client ignores proxy variables; so does the preflight.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _fetch(
    url: str,
    body: bytes | None,
    headers: dict[str, str],
    timeout_s: float,
) -> _Answer:
    request = urllib.request.Request(url, data=body, headers=headers)
    try:
        with _OPENER.open(request, timeout=timeout_s) as resp:
            return _Answer(
                resp.status, resp.headers.get("Content-Type", ""), resp.read()
            )
    except urllib.error.HTTPError as exc:
        content_type = exc.headers.get("Content-Type", "") if exc.headers else ""
        return _Answer(exc.code, content_type, exc.read())
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise SUTConnectionError(_unreachable(url, reason, timeout_s)) from None


def _unreachable(url: str, reason: object, timeout_s: float) -> str:
    if isinstance(reason, ConnectionRefusedError):
        why = "connection refused: is the server running, on this port?"
    elif isinstance(reason, socket.timeout | TimeoutError):
        why = f"no answer within {timeout_s:g} s"
    elif isinstance(reason, socket.gaierror):
        why = f"unknown host ({reason.strerror})"
    else:
        why = str(reason)
    return f"cannot reach {url}: {why}"


def _refuse_foreign(config: OpenAIConfig, why: str) -> None:
    """A 200 answer not in OpenAI's shape from a URL without ``/v1``: a server's
    own API on the same path (llama-server's native ``/completions``). Every
    request of the run would fail to parse, so the run does not start."""
    hint = _v1_hint(config.url)
    if hint:
        raise SUTConnectionError(
            f"{config.endpoint} answered, but not in the OpenAI format ({why}); {hint}"
        )


def _v1_hint(url: str) -> str:
    """How to reach the OpenAI API when ``url`` does not name ``/v1`` (else "")."""
    parts = urllib.parse.urlsplit(url.rstrip("/"))
    if "/v1" in parts.path:
        return ""
    if not parts.path or parts.path == "/":
        return f"add /v1 to --url, e.g. {url.rstrip('/')}/v1"
    base = urllib.parse.urlunsplit((parts.scheme, parts.netloc, "/v1", "", ""))
    return f"point --url at the OpenAI API base, e.g. {base}"


def _refuse_html(answer: _Answer, url: str) -> None:
    head = answer.body[:200].lstrip().lower()
    if "text/html" in answer.content_type or head.startswith((b"<!doctype", b"<html")):
        raise SUTConnectionError(
            f"{url} answered with an HTML page, not the OpenAI API; point --url at "
            "the API base, e.g. http://host:port/v1"
        )


def _unlisted(config: OpenAIConfig, report: PreflightReport) -> bool:
    return report.models is None or config.model not in report.models


def _hint(report: PreflightReport) -> str:
    return report.models[0] if report.models else "NAME (a model the server serves)"


def _names(ids: list[str], limit: int = 5) -> str:
    shown = ", ".join(ids[:limit])
    return shown + (f" and {len(ids) - limit} more" if len(ids) > limit else "")
