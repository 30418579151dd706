"""The null SUT: completes every sample inside ``issue_query``; measures engine overhead."""

from __future__ import annotations

from infermeter.loadgen.interfaces import CompletionSink, QueryBatch
from infermeter.suts.registry import SutContext, register

PAYLOAD = b"\x01\x02\x03\x04"


class NullSUT:
    """Completes at once, with ``n_tokens`` (and a first token first) on token runs."""

    name = "NullSUT"

    def __init__(self, *, token_run: bool = False, n_tokens: int = 2) -> None:
        self.token_run = token_run
        self.n_tokens = n_tokens

    def issue_query(self, batch: QueryBatch, sink: CompletionSink) -> None:
        # Response bytes only when the accuracy log wants them: keeps the hot path bare.
        data = [PAYLOAD] * len(batch) if sink.wants_data(batch.ids).any() else None
        if self.token_run:
            sink.first_token(batch.ids, data)
            sink.complete(batch.ids, n_tokens=self.n_tokens, data=data)
        else:
            sink.complete(batch.ids, data=data)

    def flush_queries(self) -> None:
        pass


@register("null")
def _factory(context: SutContext) -> NullSUT:
    return NullSUT(token_run=context.token_run)
